package sqlite

import (
	"context"
	"database/sql"
)

// listing is one searchable table: how to read its rows and which of them
// a search's metadata (and values) filters keep. SQLite has no JSON
// containment operator, so filters that need one run in Go (match) over
// the rows the plain SQL filters let through.
type listing[T any] struct {
	what  string // "assistants", "threads": for errors
	table string
	cols  string
	idCol string // the tie-breaker of every order
	scan  func(s scanner, tenant string) (T, []byte, error)
}

// search runs a search: SQL paging when match is nil, else paging after
// the Go filter.
func search[T any](ctx context.Context, d *DB, l listing[T], tenant, where string, args []any, match func(T, []byte) bool, col, dir string, limit, offset int) ([]T, error) {
	query := `SELECT ` + l.cols + ` FROM ` + l.table + where + ` ORDER BY ` + col + ` ` + dir + `, ` + l.idCol + ` ` + dir
	if match == nil {
		query += ` LIMIT ? OFFSET ?`
		args = append(args, limit, offset)
		offset = 0
	}
	out := []T{}
	err := d.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return wrap(err, "search %s", l.what)
		}
		defer rows.Close()
		for len(out) < limit && rows.Next() {
			v, md, err := l.scan(rows, tenant)
			if err != nil {
				return err
			}
			if match != nil && !match(v, md) {
				continue
			}
			if offset > 0 {
				offset--
				continue
			}
			out = append(out, v)
		}
		return wrap(rows.Err(), "search %s", l.what)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// count counts what search would find without paging.
func count[T any](ctx context.Context, d *DB, l listing[T], tenant, where string, args []any, match func(T, []byte) bool) (int, error) {
	if match == nil {
		var n int
		err := d.sq.Read.QueryRowContext(ctx, `SELECT count(*) FROM `+l.table+where, args...).Scan(&n)
		return n, wrap(err, "count %s", l.what)
	}
	n := 0
	err := d.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+l.cols+` FROM `+l.table+where, args...)
		if err != nil {
			return wrap(err, "count %s", l.what)
		}
		defer rows.Close()
		for rows.Next() {
			v, md, err := l.scan(rows, tenant)
			if err != nil {
				return err
			}
			if match(v, md) {
				n++
			}
		}
		return wrap(rows.Err(), "count %s", l.what)
	})
	return n, err
}
