package postgres

import (
	"context"
	"embed"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

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

// Exec runs the statement on the pool: one statement commits alone.
func (x driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return conn{x.d.pool}.Exec(ctx, query, args...)
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

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return c.q.QueryRow(ctx, query, args...)
}
