package sqlcore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

var _ db.Exporter = (*Store)(nil)

// ExportRows returns up to limit rows of t after after's key, in key
// order; see db.Exporter.
func (s *Store) ExportRows(ctx context.Context, t db.Table, after db.Row, limit int) ([]db.Row, error) {
	if err := dbutil.CheckExportPage(s.d.Name(), t, after, limit); err != nil {
		return nil, err
	}
	q := dbutil.ExportQuery(t, after != nil, s.d.Param)
	var args []any
	if after != nil {
		for i := range t.Key {
			args = append(args, s.d.ColumnArg(t.Columns[i], after[i]))
		}
	}
	args = append(args, limit)
	dest := make([]any, len(t.Columns))
	out, err := collect(ctx, s.d.Reader(), func(r Row) (db.Row, error) {
		for i, c := range t.Columns {
			dest[i] = s.d.ExportDest(c)
		}
		if err := r.Scan(dest...); err != nil {
			return nil, err
		}
		row := make(db.Row, len(t.Columns))
		for i, c := range t.Columns {
			var err error
			if row[i], err = s.d.ExportValue(c, dest[i]); err != nil {
				return nil, err
			}
		}
		return row, nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: export %s: %w", s.d.Name(), t.Name, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// ImportRows inserts rows into t, leaving rows whose key (or another
// unique column) the database has already, in one transaction; see
// db.Exporter. Runs keep their sequence numbers. Rows of an old export's
// trellis_leases (db.LegacyLeases) set the leases of their runs.
func (s *Store) ImportRows(ctx context.Context, t db.Table, rows []db.Row) (int, error) {
	legacy := t.Name == db.LegacyLeases.Name
	if legacy && !slices.Equal(t.Columns, db.LegacyLeases.Columns) {
		// ImportLease numbers its parameters in this order.
		return 0, fmt.Errorf("%s: import %s: the columns are not those of db.LegacyLeases", s.d.Name(), t.Name)
	}
	for _, r := range rows {
		if err := t.Check(r); err != nil {
			return 0, err
		}
	}
	names := make([]string, len(t.Columns))
	ph := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
		ph[i] = s.d.ColumnParam(c, i+1)
	}
	q := `INSERT INTO ` + t.Name + ` (` + strings.Join(names, ", ") + `)` + s.d.ImportClause(t.Name) +
		` VALUES (` + strings.Join(ph, ", ") + `) ON CONFLICT DO NOTHING`
	if legacy {
		q = s.q.ImportLease
	}
	n := 0
	err := s.d.Write(ctx, func(tx Conn) error {
		n = 0
		exec := func(args ...any) (int64, error) { return tx.Exec(ctx, q, args...) }
		if p, ok := tx.(Preparer); ok && len(rows) > 1 {
			st, err := p.Prepare(ctx, q)
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }()
			exec = func(args ...any) (int64, error) { return st.Exec(ctx, args...) }
		}
		args := make([]any, len(t.Columns))
		for _, r := range rows {
			for i, c := range t.Columns {
				args[i] = s.d.ColumnArg(c, r[i])
			}
			k, err := exec(args...)
			if err != nil {
				return err
			}
			n += int(k)
		}
		if t.Name == "trellis_runs" && n > 0 && s.q.ImportedRuns != "" {
			_, err := tx.Exec(ctx, s.q.ImportedRuns)
			return err
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: import %s: %w", s.d.Name(), t.Name, err)
	}
	return n, nil
}
