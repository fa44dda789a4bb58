package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// queryFiles are this dialect's statements for the stores written once
// in sqlcore.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// driver runs sqlcore's statements on the pool.
type driver struct{ d *DB }

var _ sqlcore.Driver = driver{}

// newCore returns the stores written once, over this dialect's
// statements.
func newCore(d *DB) (*sqlcore.Store, error) {
	return sqlcore.Open(driver{d}, queryFiles, sqlcore.Pattern)
}

func (driver) Name() string              { return "server/db/postgres" }
func (driver) Time(t time.Time) any      { return t }
func (driver) ScanTime(t *time.Time) any { return utcDest{t} }
func (driver) List(s []string) any       { return s }
func (driver) IsUnique(err error) bool   { return isUnique(err, "") }
func (driver) IsNoRows(err error) bool   { return errors.Is(err, pgx.ErrNoRows) }
func (driver) Classify(err error) error  { return classify(err) }
func (x driver) Reader() sqlcore.Conn    { return conn{x.d.pool} }

func (x driver) Read(ctx context.Context, fn func(sqlcore.Conn) error) error {
	return x.d.read(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
}

func (x driver) Write(ctx context.Context, fn func(sqlcore.Conn) error) error {
	return x.d.write(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
}

func (driver) Param(n int) string { return "$" + strconv.Itoa(n) }

func (driver) JSONContains(col, param string) string { return col + " @> " + param + "::jsonb" }

// NameContains lowers with the database's locale (non-ASCII letters
// too); the columns' "C" collation would not.
func (driver) NameContains(col, param string) string {
	return `strpos(lower(` + col + ` COLLATE "default"), lower(` + param + ` COLLATE "default")) > 0`
}

func (driver) InList(col, param string) string { return col + " = ANY(" + param + "::text[])" }

// JSONTextContains matches only a string member (->> would give another
// member's JSON text).
func (driver) JSONTextContains(col, key, param string) string {
	k := "'" + strings.ReplaceAll(key, "'", "''") + "'"
	return "jsonb_typeof(" + col + "->" + k + ") = 'string' AND strpos(lower(" + col + "->>" + k + "), lower(" + param + ")) > 0"
}

// MergesInSQL is true: jsonb || replaces top-level keys.
func (driver) MergesInSQL() bool { return true }

// TagsInAccept is true: the accept's WITH updates the thread's row once,
// its tag and expiry together.
func (driver) TagsInAccept() bool { return true }

// Exec runs the statement on the pool: one statement commits alone.
func (x driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return conn{x.d.pool}.Exec(ctx, query, args...)
}

// WriteOne runs the statement on the pool: one statement commits alone.
func (x driver) WriteOne(_ context.Context, fn func(sqlcore.Conn) error) error {
	return fn(conn{x.d.pool})
}

func (driver) Wrap(tx any) (sqlcore.Conn, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return nil, fmt.Errorf("a pgx.Tx of the same database is needed, got %T", tx)
	}
	return conn{ptx}, nil
}

func (driver) Unwrap(c sqlcore.Conn) any { return c.(conn).q }

// AppendEventRows inserts the events in one statement, as arrays.
func (driver) AppendEventRows(ctx context.Context, c sqlcore.Conn, tenant, runID string, events []db.Event) error {
	if len(events) == 0 {
		return nil
	}
	names := make([]string, len(events))
	datas := make([][]byte, len(events))
	for i, e := range events {
		names[i], datas[i] = e.Event, e.Data
	}
	// Nobody reads the insert's result: it goes with the transaction's
	// next statement or its commit.
	err := c.(sqlcore.Deferrer).ExecLater(ctx, `INSERT INTO trellis_run_events (tenant, run_id, seq, event, data, created_at)
			SELECT $1, $2, $3 + u.ord - 1, u.event, u.data, $4 FROM unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS u(event, data, ord)`,
		tenant, runID, events[0].Seq, events[0].CreatedAt, names, datas)
	return err
}

// MemberArg is the key itself.
func (driver) MemberArg(key string) any { return key }

func (driver) MemberText(col, param string) string    { return col + "->>" + param }
func (driver) MemberMissing(col, param string) string { return col + "->" + param + " IS NULL" }

// ExportDest scans into a pointer of the column's Go type (nil for NULL).
func (driver) ExportDest(c db.Column) any {
	switch c.Type {
	case db.ColText:
		return new(*string)
	case db.ColInt:
		return new(*int64)
	case db.ColBool:
		return new(*bool)
	case db.ColTime:
		return new(*time.Time)
	}
	return new([]byte)
}

func (driver) ExportValue(_ db.Column, dest any) (any, error) {
	switch p := dest.(type) {
	case **string:
		if *p != nil {
			return **p, nil
		}
	case **int64:
		if *p != nil {
			return **p, nil
		}
	case **bool:
		if *p != nil {
			return **p, nil
		}
	case **time.Time:
		if *p != nil {
			return (**p).UTC(), nil
		}
	case *[]byte:
		if *p != nil {
			return *p, nil
		}
	}
	return nil, nil
}

// ColumnArg passes JSON as text, which ColumnParam casts.
func (driver) ColumnArg(c db.Column, v any) any {
	if b, ok := v.([]byte); ok && c.Type == db.ColJSON {
		return string(b)
	}
	return v
}

func (x driver) ColumnParam(c db.Column, n int) string {
	if c.Type == db.ColJSON {
		return x.Param(n) + "::text::jsonb"
	}
	return x.Param(n)
}

// ImportClause keeps imported runs' sequence numbers, which the schema
// otherwise generates (see ImportedRuns).
func (driver) ImportClause(table string) string {
	if table == "trellis_runs" {
		return " OVERRIDING SYSTEM VALUE"
	}
	return ""
}

// utcDest scans a timestamptz in UTC (NULL: the zero time).
type utcDest struct{ t *time.Time }

func (u utcDest) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid {
		*u.t = time.Time{}
		return nil
	}
	*u.t = v.Time.UTC()
	return nil
}

// conn is a pool or a transaction as a sqlcore.Conn.
type conn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		querier
	}
}

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// ExecLater queues the statement in a pgdb.Tx, to go with its next
// statement or its commit (sqlcore.Deferrer); elsewhere it runs it now.
func (c conn) ExecLater(ctx context.Context, query string, args ...any) error {
	if t, ok := c.q.(*pgdb.Tx); ok {
		t.ExecLater(ctx, query, args...)
		return nil
	}
	_, err := c.q.Exec(ctx, query, args...)
	return err
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return c.q.QueryRow(ctx, query, args...)
}
