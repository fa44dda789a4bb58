package sqlcore

import (
	"context"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// filter is a search's conditions: those the dialect says in SQL, with
// their arguments, and those it cannot, matched in Go on each row the SQL
// ones let through (scanned with its stored metadata JSON, which is
// matched as stored: a large integer decoded into a float64 would no
// longer equal the filter's).
type filter[T any] struct {
	d     Dialect
	conds []string
	args  []any
	match []func(v T, md []byte) bool
}

func newFilter[T any](d Dialect) *filter[T] { return &filter[T]{d: d} }

// arg adds an argument and returns its parameter text.
func (f *filter[T]) arg(v any) string {
	f.args = append(f.args, v)
	return f.d.Param(len(f.args))
}

// where adds a SQL condition; each %s in cond is replaced by the next of
// vals' parameters.
func (f *filter[T]) where(cond string, vals ...any) {
	for _, v := range vals {
		cond = strings.Replace(cond, "%s", f.arg(v), 1)
	}
	f.conds = append(f.conds, cond)
}

// contains keeps the rows whose JSON column col (read by get in Go)
// contains filter.
func (f *filter[T]) contains(col string, filter dbutil.Filter, get func(v T, md []byte) []byte) {
	if filter.Empty() {
		return
	}
	if cond := f.d.JSONContains(col, f.d.Param(len(f.args)+1)); cond != "" {
		f.args = append(f.args, filter.JSON())
		f.conds = append(f.conds, cond)
		return
	}
	f.match = append(f.match, func(v T, md []byte) bool { return filter.Match(get(v, md)) })
}

// nameContains keeps the rows whose text column col (read by get in Go)
// contains name, ignoring case.
func (f *filter[T]) nameContains(col, name string, get func(v T) string) {
	if name == "" {
		return
	}
	if cond := f.d.NameContains(col, f.d.Param(len(f.args)+1)); cond != "" {
		f.args = append(f.args, name)
		f.conds = append(f.conds, cond)
		return
	}
	lower := strings.ToLower(name)
	f.match = append(f.match, func(v T, _ []byte) bool { return strings.Contains(strings.ToLower(get(v)), lower) })
}

// matchGo adds a condition matched in Go only.
func (f *filter[T]) matchGo(m func(v T, md []byte) bool) { f.match = append(f.match, m) }

func (f *filter[T]) sql() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}

func (f *filter[T]) matches(v T, md []byte) bool {
	for _, m := range f.match {
		if !m(v, md) {
			return false
		}
	}
	return true
}

// scanFunc reads a row and its stored metadata JSON.
type scanFunc[T any] func(r Row) (T, []byte, error)

// search runs selectSQL with f's conditions, in order, paged: in SQL when
// every condition is, else after the Go match.
func search[T any](ctx context.Context, c Conn, f *filter[T], selectSQL, order string, limit, offset int, scan scanFunc[T]) ([]T, error) {
	query := selectSQL + f.sql() + " ORDER BY " + order
	args := f.args
	if len(f.match) == 0 {
		query += " LIMIT " + f.d.Param(len(args)+1) + " OFFSET " + f.d.Param(len(args)+2)
		args = append(args[:len(args):len(args)], limit, offset)
		offset = 0
	}
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for len(out) < limit && rows.Next() {
		v, md, err := scan(rows)
		if err != nil {
			return nil, err
		}
		if !f.matches(v, md) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// count counts what search would find without paging: countSQL when
// every condition is in SQL, else the rows of selectSQL that match.
func count[T any](ctx context.Context, c Conn, f *filter[T], selectSQL, countSQL string, scan scanFunc[T]) (int, error) {
	if len(f.match) == 0 {
		var n int
		err := c.QueryRow(ctx, countSQL+f.sql(), f.args...).Scan(&n)
		return n, err
	}
	rows, err := c.Query(ctx, selectSQL+f.sql(), f.args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		v, md, err := scan(rows)
		if err != nil {
			return 0, err
		}
		if f.matches(v, md) {
			n++
		}
	}
	return n, rows.Err()
}

// listing is a searchable table: its search and count statements, the
// columns a search may sort by, the tie-breaking ID column and how to
// read a row.
type listing[T any] struct {
	what       string // "assistants": for errors
	sel, count string
	sorts      map[string]string
	idCol      string
	scan       scanFunc[T]
}

// page returns q's page of the rows build's filter keeps, in q's order,
// ties by ID.
func (l listing[T]) page(ctx context.Context, s *Store, q db.Query, build func() (*filter[T], error)) ([]T, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	col, dir, err := dbutil.Order(q, l.sorts)
	if err != nil {
		return nil, err
	}
	f, err := build()
	if err != nil {
		return nil, err
	}
	out, err := search(ctx, s.d.Reader(), f, l.sel, col+" "+dir+", "+l.idCol+" "+dir, limit, offset, l.scan)
	if err != nil {
		return nil, s.wrap(err, "search %s", l.what)
	}
	return out, nil
}

// total counts the rows build's filter keeps.
func (l listing[T]) total(ctx context.Context, s *Store, build func() (*filter[T], error)) (int, error) {
	f, err := build()
	if err != nil {
		return 0, err
	}
	n, err := count(ctx, s.d.Reader(), f, l.sel, l.count, l.scan)
	return n, s.wrap(err, "count %s", l.what)
}
