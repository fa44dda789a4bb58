package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

var _ db.Exporter = (*DB)(nil)

// ExportRows returns up to limit rows of t after after's key, in key
// order; see db.Exporter.
func (d *DB) ExportRows(ctx context.Context, t db.Table, after db.Row, limit int) ([]db.Row, error) {
	if err := dbutil.CheckExportPage("server/db/postgres", t, after, limit); err != nil {
		return nil, err
	}
	q := dbutil.ExportQuery(t, after != nil, func(i int) string { return fmt.Sprintf("$%d", i) })
	var args []any
	if after != nil {
		args = append(args, after[:t.Key]...)
	}
	args = append(args, limit)
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("server/db/postgres: export %s: %w", t.Name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (db.Row, error) {
		dst := make([]any, len(t.Columns))
		for i, c := range t.Columns {
			switch c.Type {
			case db.ColText:
				dst[i] = new(*string)
			case db.ColInt:
				dst[i] = new(*int64)
			case db.ColBool:
				dst[i] = new(*bool)
			case db.ColTime:
				dst[i] = new(*time.Time)
			case db.ColJSON, db.ColBytes:
				dst[i] = new([]byte)
			}
		}
		if err := r.Scan(dst...); err != nil {
			return nil, err
		}
		row := make(db.Row, len(t.Columns))
		for i := range t.Columns {
			switch p := dst[i].(type) {
			case **string:
				if *p != nil {
					row[i] = **p
				}
			case **int64:
				if *p != nil {
					row[i] = **p
				}
			case **bool:
				if *p != nil {
					row[i] = **p
				}
			case **time.Time:
				if *p != nil {
					row[i] = (**p).UTC()
				}
			case *[]byte:
				if *p != nil {
					row[i] = *p
				}
			}
		}
		return row, nil
	})
	if err != nil {
		return nil, fmt.Errorf("server/db/postgres: export %s: %w", t.Name, err)
	}
	return out, nil
}

// ImportRows inserts rows into t, leaving rows whose key (or another
// unique column) the database has already, in one transaction; see
// db.Exporter. Runs keep their sequence numbers, and the sequence that
// numbers new runs is moved past them.
func (d *DB) ImportRows(ctx context.Context, t db.Table, rows []db.Row) (int, error) {
	for _, r := range rows {
		if err := t.Check(r); err != nil {
			return 0, err
		}
	}
	names := make([]string, len(t.Columns))
	ph := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
		ph[i] = fmt.Sprintf("$%d", i+1)
		if c.Type == db.ColJSON {
			ph[i] += "::text::jsonb"
		}
	}
	override := ""
	if t.Name == "trellis_runs" {
		override = " OVERRIDING SYSTEM VALUE"
	}
	q := `INSERT INTO ` + t.Name + ` (` + strings.Join(names, ", ") + `)` + override +
		` VALUES (` + strings.Join(ph, ", ") + `) ON CONFLICT DO NOTHING`
	n := 0
	err := d.write(ctx, func(tx pgx.Tx) error {
		n = 0
		args := make([]any, len(t.Columns))
		for _, r := range rows {
			for i, c := range t.Columns {
				args[i] = r[i]
				if b, ok := r[i].([]byte); ok && c.Type == db.ColJSON {
					args[i] = string(b)
				}
			}
			tag, err := tx.Exec(ctx, q, args...)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
		}
		if override != "" && n > 0 {
			_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('trellis_runs', 'seq'),
				greatest((SELECT max(seq) FROM trellis_runs), 1))`)
			return err
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("server/db/postgres: import %s: %w", t.Name, err)
	}
	return n, nil
}
