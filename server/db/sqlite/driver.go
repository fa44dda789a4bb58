package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// queryFiles are this dialect's statements for the stores written once
// in sqlcore.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// driver runs sqlcore's statements on the file: reads on the read pool,
// writes through the single write connection.
type driver struct{ d *DB }

var _ sqlcore.Driver = driver{}

// newCore returns the stores written once, over this dialect's
// statements.
func newCore(d *DB) (*sqlcore.Store, error) {
	return sqlcore.Open(driver{d}, queryFiles, sqlcore.Pattern)
}

func (driver) Name() string               { return "server/db/sqlite" }
func (driver) Time(t time.Time) any       { return micros(t) }
func (driver) ScanTime(t *time.Time) any  { return microsDest{t} }
func (driver) IsUnique(err error) bool    { return isUnique(err) }
func (driver) IsNoRows(err error) bool    { return errors.Is(err, sql.ErrNoRows) }
func (x driver) Classify(err error) error { return classify(err, x.d.sq.Path()) }
func (x driver) Reader() sqlcore.Conn     { return conn{x.d.sq.Read} }
func (driver) List(s []string) any        { return jsonList(s) }

func (driver) Param(n int) string { return "?" + strconv.Itoa(n) }

// JSONContains is "": SQLite's JSON functions cannot express containment
// of nested arrays, so rows are matched in Go.
func (driver) JSONContains(col, param string) string { return "" }

// NameContains is "": SQLite's lower() folds ASCII only, so names are
// matched in Go.
func (driver) NameContains(col, param string) string { return "" }

// InList expands the JSON array List passes.
func (driver) InList(col, param string) string {
	return col + " IN (SELECT value FROM json_each(" + param + "))"
}

// JSONTextContains is "": SQLite's lower() folds ASCII only.
func (driver) JSONTextContains(col, key, param string) string { return "" }

// MergesInSQL is false: SQLite's json_patch merges recursively and drops
// null members, not PostgreSQL's top-level ||.
func (driver) MergesInSQL() bool { return false }

// TagsInAccept is false: an INSERT cannot update another table; TagThread
// follows it in the transaction (a statement, not a round trip).
func (driver) TagsInAccept() bool { return false }

var _ sqlcore.Rewriter = driver{}

// Rewrite turns a statement's numbered parameters into plain "?" when
// they appear as ?1, ?2, … in order, each once: the driver binds a
// numbered parameter by looking up its name, one allocation per parameter
// and execution, and a plain one by position. Any other statement (a
// parameter repeated or out of order) is returned as it is.
func (driver) Rewrite(query string) string {
	var b strings.Builder
	next, inString := 1, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c == '\'' {
			inString = !inString
		}
		if c != '?' || inString {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(query[i+1 : j]); err != nil || n != next {
			return query
		}
		next++
		b.WriteByte('?')
		i = j - 1
	}
	return b.String()
}

// jsonList is a list as the JSON array json_each expands.
func jsonList(s []string) string {
	if s == nil {
		s = []string{}
	}
	b, _ := json.Marshal(s) // a []string always encodes
	return string(b)
}

func (x driver) Read(ctx context.Context, fn func(sqlcore.Conn) error) error {
	return x.d.read(ctx, func(tx *sql.Tx) error { return fn(conn{tx}) })
}

func (x driver) Write(ctx context.Context, fn func(sqlcore.Conn) error) error {
	return x.d.write(ctx, func(tx *sql.Tx) error { return fn(conn{tx}) })
}

func (x driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := x.d.write(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = conn{tx}.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

func (x driver) WriteOne(ctx context.Context, fn func(sqlcore.Conn) error) error {
	return x.Write(ctx, fn)
}

func (driver) Wrap(tx any) (sqlcore.Conn, error) {
	stx, ok := tx.(*sql.Tx)
	if !ok || stx == nil {
		return nil, fmt.Errorf("a *sql.Tx of the same file is needed, got %T", tx)
	}
	return conn{stx}, nil
}

func (driver) Unwrap(c sqlcore.Conn) any { return c.(conn).q }

// eventRowsMax is how many events one INSERT of AppendEventRows carries.
const eventRowsMax = 100

// eventInsert is the INSERT of eventRowsMax events; the statement for n
// events is its first eventRowsLen(n) bytes, so no statement text is
// built per append (and the statement cache sees the same strings).
var eventInsert = `INSERT INTO trellis_run_events (tenant, run_id, seq, event, data, created_at) VALUES ` +
	strings.TrimSuffix(strings.Repeat(eventRow+`, `, eventRowsMax), ", ")

const (
	eventRow       = `(?, ?, ?, ?, ?, ?)`
	eventInsertCol = 6 // the parameters of an eventRow
)

// eventRowsLen is the length of eventInsert's prefix holding n rows.
func eventRowsLen(n int) int {
	return len(eventInsert) - (eventRowsMax-n)*len(eventRow+`, `)
}

// AppendEventRows inserts the events in statements of up to eventRowsMax
// rows.
func (driver) AppendEventRows(ctx context.Context, c sqlcore.Conn, tenant, runID string, events []db.Event) error {
	var t, r any = tenant, runID // boxed once, not per row
	for start := 0; start < len(events); start += eventRowsMax {
		batch := events[start:min(start+eventRowsMax, len(events))]
		args := make([]any, 0, eventInsertCol*len(batch))
		for _, e := range batch {
			args = append(args, t, r, e.Seq, e.Event, []byte(e.Data), micros(e.CreatedAt))
		}
		if _, err := c.Exec(ctx, eventInsert[:eventRowsLen(len(batch))], args...); err != nil {
			return err
		}
	}
	return nil
}

// MemberArg is the JSON path of a top-level key.
func (driver) MemberArg(key string) any { return `$."` + key + `"` }

func (driver) MemberText(col, param string) string { return "json_extract(" + col + ", " + param + ")" }

func (driver) MemberMissing(col, param string) string {
	return "json_type(" + col + ", " + param + ") IS NULL"
}

// ExportDest scans any value; ExportValue converts it.
func (driver) ExportDest(db.Column) any { return new(any) }

// ExportValue converts a scanned SQLite value to the column's Go type.
func (driver) ExportValue(c db.Column, dest any) (any, error) {
	v := *dest.(*any)
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

// ColumnArg stores times as Unix microseconds and booleans as 0 or 1.
func (driver) ColumnArg(_ db.Column, v any) any {
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

// ColumnParam is a plain "?": an import's arguments come in column order,
// and the driver binds a numbered parameter by looking up its name, one
// allocation per parameter and row.
func (driver) ColumnParam(db.Column, int) string { return "?" }

func (driver) ImportClause(string) string { return "" }

// microsDest scans stored Unix microseconds (or NULL, the zero time).
type microsDest struct{ t *time.Time }

func (m microsDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = fromMicros(v)
	default:
		return fmt.Errorf("a stored instant is %T, not Unix microseconds", src)
	}
	return nil
}

// conn is a *sql.DB or *sql.Tx as a sqlcore.Conn.
type conn struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	rows, err := c.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return c.q.QueryRowContext(ctx, query, args...)
}

var _ sqlcore.Preparer = conn{}

// Prepare prepares query on the transaction (or pool) under c.
func (c conn) Prepare(ctx context.Context, query string) (sqlcore.Stmt, error) {
	p, ok := c.q.(interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	})
	if !ok {
		return nil, fmt.Errorf("%T cannot prepare statements", c.q)
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt{st}, nil
}

// stmt is a prepared *sql.Stmt as a sqlcore.Stmt.
type stmt struct{ st *sql.Stmt }

func (s stmt) Exec(ctx context.Context, args ...any) (int64, error) {
	res, err := s.st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s stmt) Close() error { return s.st.Close() }

// sqlRows drops the error of Close, which Err reports.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
