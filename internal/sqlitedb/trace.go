package sqlitedb

import (
	"context"
	"database/sql/driver"
	"io"
	"sync/atomic"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// While a sqltrace observer is set, every connection reports its
// statements and transactions to it. How many rows a statement changed is
// read from SQLite's total_changes() before and after it (after its rows
// are closed, for a statement with RETURNING), on the same connection.

var connIDs atomic.Uint64

// totalChanges returns the connection's total_changes(), or -1.
func (c *cachingConn) totalChanges(ctx context.Context) int64 {
	rows, err := c.inner.QueryContext(ctx, `SELECT total_changes()`, nil)
	if err != nil {
		return -1
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil && err != io.EOF {
		return -1
	}
	n, _ := v[0].(int64)
	return n
}

func (c *cachingConn) emit(kind sqltrace.Kind, sql string, changed int64) {
	sqltrace.Emit(sqltrace.Event{Backend: "sqlite", Conn: c.id, Kind: kind, SQL: sql, Changed: changed})
}

// BeginTx begins a transaction, reporting it when traced.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.inner.BeginTx(ctx, opts)
	if err != nil || !sqltrace.Active() {
		return tx, err
	}
	c.emit(sqltrace.Begin, "", 0)
	return &tracedTx{Tx: tx, c: c, start: c.totalChanges(ctx)}, nil
}

// tracedTx reports how its transaction ended.
type tracedTx struct {
	driver.Tx
	c     *cachingConn
	start int64
}

func (t *tracedTx) Commit() error {
	changed := t.c.totalChanges(context.Background()) - t.start
	err := t.Tx.Commit()
	if err != nil {
		t.c.emit(sqltrace.Rollback, "", 0)
		return err
	}
	t.c.emit(sqltrace.Commit, "", changed)
	return nil
}

func (t *tracedTx) Rollback() error {
	err := t.Tx.Rollback()
	t.c.emit(sqltrace.Rollback, "", 0)
	return err
}

// PrepareContext prepares a statement, which reports its runs when
// traced.
func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.inner.PrepareContext(ctx, query)
	if err != nil || !sqltrace.Active() {
		return st, err
	}
	return &tracedStmt{Stmt: st, c: c, sql: query}, nil
}

// tracedStmt is a prepared statement that reports its runs.
type tracedStmt struct {
	driver.Stmt
	c   *cachingConn
	sql string
}

func (s *tracedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	before := s.c.totalChanges(ctx)
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	s.c.emit(sqltrace.Statement, s.sql, s.c.totalChanges(ctx)-before)
	return res, err
}

func (s *tracedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	before := s.c.totalChanges(ctx)
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	done := func() { s.c.emit(sqltrace.Statement, s.sql, s.c.totalChanges(ctx)-before) }
	if err != nil {
		done()
		return nil, err
	}
	if r, ok := rows.(richRows); ok {
		return &cachedRows{richRows: r, conn: s.c, onClose: done}, nil
	}
	done()
	return rows, nil
}
