package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

var _ db.Exporter = (*DB)(nil)

// ExportRows returns up to limit rows of t after after's key, in key
// order; see db.Exporter.
func (d *DB) ExportRows(ctx context.Context, t db.Table, after db.Row, limit int) ([]db.Row, error) {
	if err := dbutil.CheckExportPage("server/db/sqlite", t, after, limit); err != nil {
		return nil, err
	}
	q := dbutil.ExportQuery(t, after != nil, func(int) string { return "?" })
	var args []any
	if after != nil {
		for i := range t.Key {
			args = append(args, sqliteValue(t.Columns[i], after[i]))
		}
	}
	args = append(args, limit)
	rows, err := d.sq.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("server/db/sqlite: export %s: %w", t.Name, err)
	}
	var out []db.Row
	for rows.Next() {
		raw := make([]any, len(t.Columns))
		ptrs := make([]any, len(t.Columns))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			rows.Close()
			return nil, fmt.Errorf("server/db/sqlite: export %s: %w", t.Name, err)
		}
		r := make(db.Row, len(t.Columns))
		for i, c := range t.Columns {
			if r[i], err = rowValue(c, raw[i]); err != nil {
				rows.Close()
				return nil, fmt.Errorf("server/db/sqlite: export %s: %w", t.Name, err)
			}
		}
		out = append(out, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("server/db/sqlite: export %s: %w", t.Name, err)
	}
	return out, nil
}

// rowValue converts a scanned SQLite value to the column's Go type.
func rowValue(c db.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Type {
	case db.ColText:
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
	case db.ColInt, db.ColBool, db.ColTime:
		n, ok := v.(int64)
		if !ok {
			break
		}
		switch c.Type {
		case db.ColBool:
			return n != 0, nil
		case db.ColTime:
			return fromMicros(n), nil
		}
		return n, nil
	case db.ColJSON, db.ColBytes:
		switch b := v.(type) {
		case []byte:
			return append([]byte(nil), b...), nil
		case string:
			return []byte(b), nil
		}
	}
	return nil, fmt.Errorf("column %s holds a %T, not a value of its type", c.Name, v)
}

// sqliteValue converts a Row value to what the column stores.
func sqliteValue(c db.Column, v any) any {
	switch x := v.(type) {
	case time.Time:
		return micros(x)
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// ImportRows inserts rows into t, leaving rows whose key the file has
// already, in one transaction; see db.Exporter.
func (d *DB) ImportRows(ctx context.Context, t db.Table, rows []db.Row) (int, error) {
	for _, r := range rows {
		if err := t.Check(r); err != nil {
			return 0, err
		}
	}
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	q := `INSERT INTO ` + t.Name + ` (` + strings.Join(names, ", ") + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + `) ON CONFLICT DO NOTHING`
	n := 0
	err := d.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		args := make([]any, len(t.Columns))
		for _, r := range rows {
			for i, c := range t.Columns {
				args[i] = sqliteValue(c, r[i])
			}
			res, err := st.ExecContext(ctx, args...)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("server/db/sqlite: import %s: %w", t.Name, err)
	}
	return n, nil
}
