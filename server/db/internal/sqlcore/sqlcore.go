// Package sqlcore is the Go side of the service's SQL stores, written
// once: argument building, scanning, error mapping, paging and JSON
// handling for the tables both backends share. Each backend (server/db/sqlite,
// server/db/postgres) keeps its own SQL text in embedded query files and
// gives this package a small Driver: how to run a statement or a
// transaction on its connection, how it stores an instant and a list of
// strings, and how it reports a unique violation or no row.
//
// Query text uses numbered parameters ($1 in PostgreSQL, ?1 in SQLite), so
// one argument list serves both dialects whatever order or repetition a
// dialect's statement needs.
package sqlcore

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// Row is one result row to scan (a *sql.Row or a pgx.Row).
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set read row by row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Conn runs statements: a transaction, or a pool outside one.
type Conn interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a statement that returns rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a statement that returns at most one row; its Scan
	// reports no row as an error IsNoRows recognises.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Deferrer is a Conn that can hold a write statement whose result nobody
// reads and send it with the transaction's next statement or its commit
// (PostgreSQL: one round trip fewer, see pgdb.Tx). Its failure is then
// reported by that later call, and fails the transaction as surely.
type Deferrer interface {
	ExecLater(ctx context.Context, query string, args ...any) error
}

// execLater runs query in c now, or later with c's next statement when c
// is a Deferrer: for a write in a transaction whose result is not read.
func execLater(ctx context.Context, c Conn, query string, args ...any) error {
	if d, ok := c.(Deferrer); ok {
		return d.ExecLater(ctx, query, args...)
	}
	_, err := c.Exec(ctx, query, args...)
	return err
}

// Preparer is a Conn that prepares a statement to run many times, where
// that saves parsing it each time (database/sql on SQLite; pgx caches
// statements itself). ImportRows uses it when the transaction's Conn is
// one.
type Preparer interface {
	Prepare(ctx context.Context, query string) (Stmt, error)
}

// Stmt is a prepared statement.
type Stmt interface {
	// Exec runs the statement and returns how many rows it changed.
	Exec(ctx context.Context, args ...any) (int64, error)
	Close() error
}

// Dialect is how a backend stores values and reports errors.
type Dialect interface {
	// Name prefixes errors: "server/db/sqlite".
	Name() string
	// Time is the argument that stores an instant (never zero).
	Time(t time.Time) any
	// ScanTime is the scan destination that reads a stored instant into
	// *t, in UTC (the zero time for NULL).
	ScanTime(t *time.Time) any
	// List is the argument for a list of strings, as the dialect's query
	// text expects it (an array, or a JSON array to expand).
	List(s []string) any
	// IsUnique reports a unique or primary-key violation.
	IsUnique(err error) bool
	// IsNoRows reports a QueryRow that found no row.
	IsNoRows(err error) bool
	// Param is the text of the numbered parameter n (from 1) in a
	// statement built at run time.
	Param(n int) string
	// JSONContains is the SQL condition "the JSON in column col contains
	// the JSON document in parameter param" (PostgreSQL's jsonb @>), or ""
	// when the dialect cannot say it in SQL and the rows are matched in Go
	// (dbutil.Filter.Match) instead.
	JSONContains(col, param string) string
	// NameContains is the SQL condition "text column col contains the text
	// of parameter param, ignoring case", or "" when the rows are matched
	// in Go (strings.Contains of the lowered texts) instead.
	NameContains(col, param string) string
	// InList is the SQL condition "column col is one of the list in
	// parameter param" (the parameter given List's value).
	InList(col, param string) string
	// JSONTextContains is the SQL condition "the JSON object in column col
	// has a string under key containing the text of parameter param,
	// ignoring case", or "" when the rows are matched in Go instead.
	JSONTextContains(col, key, param string) string
	// MergesInSQL reports whether the statements that patch stored
	// metadata (UpdateThreadMetadata, PatchCheckpointMetadata) merge the
	// patch into the stored document themselves (top-level keys replace).
	// When false the store reads the stored metadata in the write
	// transaction, merges in Go, and passes the merged document.
	MergesInSQL() bool
	// TagsInAccept reports whether InsertRunOnThread and
	// InsertThreadAndRun take a thread tag as their last two arguments
	// (graph and assistant ID, "" for none) and set it as TagThread does
	// on a thread that existed, once the run is stored. When false
	// TagThread follows them in the transaction.
	TagsInAccept() bool
	// Classify turns a storage failure (full disk, lost connection) into a
	// *db.StorageError and returns other errors unchanged.
	Classify(err error) error
	// MemberArg is the argument naming the top-level key of a JSON object
	// for MemberText and MemberMissing (a JSON path, or the key itself).
	MemberArg(key string) any
	// MemberText is the SQL expression "the member of the JSON object in
	// column col that parameter param names (see MemberArg), as text".
	MemberText(col, param string) string
	// MemberMissing is the SQL condition "the JSON object in column col
	// has no member named by parameter param".
	MemberMissing(col, param string) string
	// Columns is how the dialect reads and writes db.Table rows for
	// export and import.
	Columns
}

// Columns is how a dialect converts db.Table rows (see db.Exporter).
type Columns interface {
	// ExportDest is the scan destination for a value of column c.
	ExportDest(c db.Column) any
	// ExportValue is the value ExportDest's destination holds after a
	// scan, as the column's Go type (nil for NULL).
	ExportValue(c db.Column, dest any) (any, error)
	// ColumnArg is the argument that stores v, a value of column c.
	ColumnArg(c db.Column, v any) any
	// ColumnParam is the text of parameter n (from 1) where it stores a
	// value of column c, in a statement whose parameters come in order.
	ColumnParam(c db.Column, n int) string
	// ImportClause is what an import's INSERT into table needs between its
	// column list and VALUES ("" for nothing; PostgreSQL's runs keep their
	// sequence numbers).
	ImportClause(table string) string
}

// Driver is a backend's connection with its dialect.
type Driver interface {
	Dialect
	// Read runs fn in a read-only transaction: one snapshot.
	Read(ctx context.Context, fn func(Conn) error) error
	// Write runs fn in a write transaction, committed when fn returns nil.
	Write(ctx context.Context, fn func(Conn) error) error
	// Reader runs single reads outside a transaction.
	Reader() Conn
	// Exec runs a single write statement in a transaction of its own and
	// returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// WriteOne runs fn, which makes a single write statement, so that the
	// statement commits alone: in a write transaction where the dialect
	// needs one for its writes (SQLite's write connection), else on the
	// pool.
	WriteOne(ctx context.Context, fn func(Conn) error) error
	// Wrap is a write transaction the caller opened on this database (a
	// *sql.Tx for SQLite, a pgx.Tx for PostgreSQL) as a Conn; another type
	// is an error naming what was wanted.
	Wrap(tx any) (Conn, error)
	// Unwrap is the transaction under a Conn that Write or Wrap gave: what
	// the internal/txhook hooks receive.
	Unwrap(c Conn) any
	// AppendEventRows inserts events, their Seq and CreatedAt set, as rows
	// of the run's event log in the transaction c.
	AppendEventRows(ctx context.Context, c Conn, tenant, runID string, events []db.Event) error
}

// Store implements db.DB's stores (all but Ping and Close), db.Exporter
// and the transaction folds of server/db/folds.go, written once over a
// Driver and its dialect's Queries. A backend's DB embeds it.
type Store struct {
	d Driver
	q *Queries
}

// Open loads the dialect's query files (the .sql files in fsys matching
// pattern, see Load) and returns a Store running them on d.
func Open(d Driver, fsys fs.FS, pattern string) (*Store, error) {
	q, err := Load(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	return New(d, q)
}

// Rewriter is a Driver that rewrites the text of each statement New is
// given, keeping its meaning, into a form its database runs cheaper.
type Rewriter interface {
	Rewrite(query string) string
}

// New returns a Store running q's statements on d, rewritten when d is a
// Rewriter. It fails when q lacks a statement (see Queries.Check).
func New(d Driver, q *Queries) (*Store, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name(), err)
	}
	if r, ok := d.(Rewriter); ok {
		for _, st := range q.statements() {
			st.v.SetString(r.Rewrite(st.v.String()))
		}
	}
	return &Store{d: d, q: q}, nil
}

// wrap prefixes err with the backend and what was being done, keeping
// sentinels unwrappable, and classifies storage failures.
func (s *Store) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return s.d.Classify(fmt.Errorf("%s: %s: %w", s.d.Name(), fmt.Sprintf(format, args...), err))
}

// fail is an error about a row: what, then the sentinel.
func (s *Store) fail(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", s.d.Name(), fmt.Sprintf(format, args...), sentinel)
}

// notFound is the error for a missing row.
func (s *Store) notFound(what, id, tenant string) error {
	return s.fail(db.ErrNotFound, "%s %q (tenant %q)", what, id, tenant)
}

// getOne reads the row query returns with scan: ErrNotFound naming what,
// id and tenant when there is none.
func getOne[T any](ctx context.Context, s *Store, c Conn, what, tenant, id string, scan func(Row) (T, error), query string) (T, error) {
	v, err := scan(c.QueryRow(ctx, query, tenant, id))
	if s.d.IsNoRows(err) {
		var zero T
		return zero, s.notFound(what, id, tenant)
	}
	if err != nil {
		var zero T
		return zero, s.wrap(err, "get %s %q", what, id)
	}
	return v, nil
}

// locked is forUpdate when lock is set, else plain.
func locked(lock bool, plain, forUpdate string) string {
	if lock {
		return forUpdate
	}
	return plain
}

// rowOnly drops the stored metadata a search scan also returns.
func rowOnly[T any](scan scanFunc[T]) func(Row) (T, error) {
	return func(r Row) (T, error) {
		v, _, err := scan(r)
		return v, err
	}
}

// collect reads every row of a query with scan; an empty result is an
// empty, non-nil slice.
func collect[T any](ctx context.Context, c Conn, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
