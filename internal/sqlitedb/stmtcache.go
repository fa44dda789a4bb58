package sqlitedb

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"

	"modernc.org/sqlite"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// The SQLite driver parses a statement's text on every Exec and Query that
// was not prepared by the caller; for River's long queries and the run
// service's many small ones, parsing was about half of the service's CPU
// time. database/sql has no statement cache, so every connection this
// package opens keeps its own: an LRU of prepared statements by SQL text,
// reused while no open result set holds them. SQLite re-prepares a cached
// statement by itself when the schema changes (sqlite3_prepare_v2).

// stmtCacheSize bounds the statements kept per connection.
const stmtCacheSize = 128

// connector opens connections of the SQLite driver wrapped in a cache.
type connector struct {
	base driver.Connector
}

func newConnector(dsn string) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return connector{base: base}, nil
}

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c connector) Driver() driver.Driver { return c.base.Driver() }

// inner is what the wrapped connection must offer; the SQLite driver's
// connection does.
type inner interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a connection with a statement cache. database/sql uses a
// connection from one goroutine at a time, but a result set may stay open
// while further statements run on the same connection (inside a
// transaction), so a statement in use by open rows is never handed out
// again: the call falls back to an uncached statement.
type cachingConn struct {
	inner
	id    uint64     // tells connections apart in sqltrace events
	write bool       // the physical write connection (group.go)
	mu    sync.Mutex // guards the cache against a rows.Close from another goroutine
	lru   *list.List // of *cachedStmt, most recent first
	bySQL map[string]*list.Element
}

type cachedStmt struct {
	sql   string
	stmt  driver.Stmt
	busy  bool // open rows use it
	evict bool // dropped from the cache while busy: close when released
}

func newCachingConn(c driver.Conn) (driver.Conn, error) {
	in, ok := c.(inner)
	if !ok {
		c.Close()
		return nil, errors.New("sqlitedb: the SQLite driver's connection lacks an interface the statement cache needs")
	}
	return &cachingConn{inner: in, id: connIDs.Add(1), lru: list.New(), bySQL: map[string]*list.Element{}}, nil
}

// acquire returns the cached statement for query, preparing it when
// absent, marked busy; nil when open rows use it. A script of several
// statements is cached too: the driver then re-parses it statement by
// statement on each use, as it would uncached.
func (c *cachingConn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	c.mu.Lock()
	if el, ok := c.bySQL[query]; ok {
		cs := el.Value.(*cachedStmt)
		if cs.busy {
			c.mu.Unlock()
			return nil, nil
		}
		cs.busy = true
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return cs, nil
	}
	c.mu.Unlock()
	st, err := c.inner.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{sql: query, stmt: st, busy: true}
	c.mu.Lock()
	c.bySQL[query] = c.lru.PushFront(cs)
	var drop []driver.Stmt
	for c.lru.Len() > stmtCacheSize {
		old := c.lru.Back()
		oc := old.Value.(*cachedStmt)
		c.lru.Remove(old)
		delete(c.bySQL, oc.sql)
		if oc.busy {
			oc.evict = true
		} else {
			drop = append(drop, oc.stmt)
		}
	}
	c.mu.Unlock()
	for _, s := range drop {
		s.Close()
	}
	return cs, nil
}

// release marks cs free again, closing it if it was evicted meanwhile.
func (c *cachingConn) release(cs *cachedStmt) {
	c.mu.Lock()
	cs.busy = false
	closeIt := cs.evict
	c.mu.Unlock()
	if closeIt {
		cs.stmt.Close()
	}
}

// ExecContext runs query on its cached statement.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if sqltrace.Active() {
		before := c.totalChanges(ctx)
		res, err := c.execContext(ctx, query, args)
		c.emit(sqltrace.Statement, query, c.totalChanges(ctx)-before)
		return res, err
	}
	return c.execContext(ctx, query, args)
}

func (c *cachingConn) execContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	defer c.release(cs)
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

// QueryContext runs query on its cached statement; the statement is
// released when the rows are closed.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if !sqltrace.Active() {
		return c.queryContext(ctx, query, args)
	}
	before := c.totalChanges(ctx)
	rows, err := c.queryContext(ctx, query, args)
	done := func() { c.emit(sqltrace.Statement, query, c.totalChanges(ctx)-before) }
	if err != nil {
		done()
		return nil, err
	}
	switch r := rows.(type) {
	case *cachedRows:
		r.onClose = done
		return r, nil
	case richRows:
		return &cachedRows{richRows: r, conn: c, onClose: done}, nil
	}
	done()
	return rows, nil
}

func (c *cachingConn) queryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.release(cs)
		return nil, err
	}
	rich, ok := rows.(richRows)
	if !ok {
		rows.Close()
		c.release(cs)
		return c.inner.QueryContext(ctx, query, args)
	}
	return &cachedRows{richRows: rich, conn: c, cs: cs}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	var stmts []driver.Stmt
	for el := c.lru.Front(); el != nil; el = el.Next() {
		stmts = append(stmts, el.Value.(*cachedStmt).stmt)
	}
	c.lru.Init()
	clear(c.bySQL)
	c.mu.Unlock()
	var errs []error
	for _, s := range stmts {
		errs = append(errs, s.Close())
	}
	errs = append(errs, c.inner.Close())
	return errors.Join(errs...)
}

// richRows is what the SQLite driver's rows offer: column types too.
type richRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows releases its statement on Close (when it has one) and
// then calls onClose (when set).
type cachedRows struct {
	richRows
	conn    *cachingConn
	cs      *cachedStmt
	onClose func()
	once    sync.Once
}

func (r *cachedRows) Close() error {
	err := r.richRows.Close()
	r.once.Do(func() {
		if r.cs != nil {
			r.conn.release(r.cs)
		}
		if r.onClose != nil {
			r.onClose()
		}
	})
	return err
}
