package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// Group commit. A file has one physical write connection, and every write
// transaction used to hold it from BEGIN IMMEDIATE to COMMIT, so at many
// clients COMMIT (writing the transaction's pages to the WAL) ran once per
// transaction. The write pool's connections are now virtual connections
// that take turns on the physical one: the first transaction of a group
// begins the physical transaction, each transaction (a "member") runs
// inside a SAVEPOINT of its own, one after another, and its Commit
// RELEASEs the savepoint and then waits until the group's physical COMMIT.
// The first member of a group, which began it, needs no savepoint: the
// physical transaction holds its writes only, so its rollback is the
// transaction's ROLLBACK, which ends the group. A group of one (a lone
// writer, the common case) is thus BEGIN IMMEDIATE, its statements and
// COMMIT, as a plain transaction, without the SAVEPOINT and RELEASE that
// cost a lone durable step (checkpoint/sqlite's AppendWrites) 11 % of its
// instructions.
// The member that ends while no other caller waits for the connection (or
// when the group is full) commits the group, and so a group of one
// commits at once, as before. A member's Rollback undoes only its own
// savepoint. A physical COMMIT that fails is the error of every member of
// the group, and a member's Commit returns only after its group's COMMIT:
// no caller learns of a commit that a crash could still undo, beyond what
// synchronous=NORMAL already allows.
//
// Callers must not, inside a write transaction, wait for another
// goroutine's write transaction to commit: that one's Commit waits for
// the group, which waits for the waiting member to end. (Before groups,
// waiting for another goroutine's write inside a write transaction
// deadlocked already, on the pool's one connection.)

// maxGroup bounds the transactions committed together, so that a steady
// stream of writers cannot keep the first member of a group waiting.
const maxGroup = 16

// writeConns bounds the write pool's virtual connections: callers in a
// group hold theirs until the group commits.
const writeConns = 256

// Statements of the group protocol. One savepoint name serves every member:
// members never overlap, so the name is free again when the next begins.
const (
	beginGroup  = `BEGIN IMMEDIATE`
	commitGroup = `COMMIT`
	abortGroup  = `ROLLBACK`
	beginMember = `SAVEPOINT trellis_member`
	endMember   = `RELEASE trellis_member`
	undoMember  = `ROLLBACK TO trellis_member`
)

// errGroupLost is wrapped by the errors of the members of a group whose
// physical transaction SQLite rolled back before its COMMIT.
var errGroupLost = errors.New("sqlitedb: the write transaction was rolled back with its group")

// SerializesWrites reports whether pool is the Write pool of a DB: its
// connections are virtual and take turns on one physical connection, so,
// whatever its MaxOpenConnections, its statements never run at once, as
// drivers that need a pool of one connection (River's) require.
func SerializesWrites(pool *sql.DB) bool {
	filesMu.Lock()
	defer filesMu.Unlock()
	for _, f := range files {
		if f.write == pool {
			return true
		}
	}
	return false
}

// writer is the physical write connection of a file and the turn of its
// virtual connections on it (the "token").
type writer struct {
	base driver.Connector // opens the physical connection

	openMu sync.Mutex
	phys   *cachingConn // nil until the first Connect

	mu    sync.Mutex
	held  bool             // a caller has the turn
	since time.Time        // when it got it
	queue []chan time.Time // callers waiting for the turn, first first; sent the time of the handover
	group *group           // the open physical transaction, if any
}

// group is one physical transaction and the members it holds.
type group struct {
	done    chan struct{} // closed after the physical COMMIT or ROLLBACK
	err     error         // the group's result, set before done closes
	members int           // members that ended in it
	lost    error         // set when the transaction was rolled back under a member
	over    bool          // its first member rolled the transaction back: nothing to commit
}

func newWriter(dsn string) (*writer, error) {
	base, err := newConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &writer{base: base}, nil
}

// Connect returns a new virtual connection, opening the physical one
// first if needed.
func (w *writer) Connect(ctx context.Context) (driver.Conn, error) {
	w.openMu.Lock()
	defer w.openMu.Unlock()
	if w.phys == nil {
		c, err := w.base.Connect(ctx)
		if err != nil {
			return nil, err
		}
		w.phys = c.(*cachingConn)
		w.phys.write = true
	}
	return &vconn{w: w}, nil
}

// Driver returns the SQLite driver.
func (w *writer) Driver() driver.Driver { return w.base.Driver() }

// close closes the physical connection; the pool over w must be closed.
func (w *writer) close() error {
	w.openMu.Lock()
	defer w.openMu.Unlock()
	if w.phys == nil {
		return nil
	}
	err := w.phys.Close()
	w.phys = nil
	return err
}

// take waits for the turn on the physical connection.
func (w *writer) take(ctx context.Context) error {
	w.mu.Lock()
	if !w.held {
		w.held = true
		w.since = time.Now()
		w.mu.Unlock()
		return nil
	}
	ch := make(chan time.Time, 1)
	w.queue = append(w.queue, ch)
	w.mu.Unlock()
	select {
	case t := <-ch:
		writeHandoff.Add(int64(time.Since(t)))
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	for i, q := range w.queue {
		if q == ch {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			w.mu.Unlock()
			return ctx.Err()
		}
	}
	w.mu.Unlock()
	<-ch // the turn was handed over meanwhile: pass it on
	if g := w.open(); g != nil {
		w.end(g, false)
	} else {
		w.release()
	}
	return ctx.Err()
}

// open returns the open group, nil when none; only the turn's holder
// calls it.
func (w *writer) open() *group {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.group
}

// giveLocked hands the turn to the first waiting caller, or frees it.
func (w *writer) giveLocked() {
	now := time.Now()
	writeHeld.Add(int64(now.Sub(w.since)))
	if len(w.queue) == 0 {
		w.held = false
		return
	}
	ch := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.since = now
	ch <- now
}

// release gives up a turn taken outside any group.
func (w *writer) release() {
	w.mu.Lock()
	w.giveLocked()
	w.mu.Unlock()
}

// join makes the turn's holder a member of the open group, beginning one
// when none is open, in which case the member is the group's first and
// bare: it has no savepoint (see finish). On failure the turn is given up.
func (w *writer) join(ctx context.Context) (g *group, bare bool, err error) {
	g = w.open()
	if g == nil {
		if _, err := w.phys.execContext(ctx, beginGroup, nil); err != nil {
			w.release()
			return nil, false, err
		}
		g = &group{done: make(chan struct{})}
		w.mu.Lock()
		w.group = g
		w.mu.Unlock()
		return g, true, nil
	}
	if _, err := w.phys.execContext(context.WithoutCancel(ctx), beginMember, nil); err != nil {
		g.lost = fmt.Errorf("%w: %v", errGroupLost, err)
		w.end(g, false)
		return nil, false, err
	}
	return g, false, nil
}

// finish ends the holder's part of g, keeping its writes (commit) or
// undoing them. A member in a savepoint releases it, or rolls back to it
// first; a savepoint that is gone means SQLite rolled the whole
// transaction back (an I/O error, a full disk): the group is lost. A bare
// member (the group's first) undoes its writes with the transaction's
// ROLLBACK, after which the group is over; keeping them needs no
// statement, unless one of its statements failed (failed): SQLite may
// then have rolled the transaction back, which is checked, so that a
// later member's savepoint does not open a new transaction in its place.
func (w *writer) finish(g *group, commit, bare, failed bool) error {
	ctx := context.Background()
	if bare {
		switch {
		case !commit:
			g.over = true
			if _, err := w.phys.execContext(ctx, abortGroup, nil); err != nil && w.active(ctx) {
				g.lost = fmt.Errorf("%w: %v", errGroupLost, err)
				return g.lost
			}
		case failed && !w.active(ctx):
			g.lost = fmt.Errorf("%w: SQLite rolled it back after a failed statement", errGroupLost)
			return g.lost
		}
		return nil
	}
	var err error
	if !commit {
		_, err = w.phys.execContext(ctx, undoMember, nil)
	}
	if err == nil {
		_, err = w.phys.execContext(ctx, endMember, nil)
	}
	if err != nil && g.lost == nil {
		g.lost = fmt.Errorf("%w: %v", errGroupLost, err)
	}
	if err != nil {
		return g.lost
	}
	return nil
}

// active reports whether the physical connection has a transaction open.
// The driver does not tell (sqlite3_get_autocommit), so it asks SQLite to
// begin one, which fails inside a transaction; one it began is rolled
// back. Only the rare paths call it: after a failed statement.
func (w *writer) active(ctx context.Context) bool {
	_, err := w.phys.execContext(ctx, `BEGIN`, nil)
	if err == nil {
		w.phys.execContext(ctx, abortGroup, nil)
		return false
	}
	return strings.Contains(err.Error(), "within a transaction")
}

// end ends the holder's turn in g: it hands the turn to the next waiting
// caller, who joins g, or, when none waits, g is full, lost or over, ends
// g's physical transaction (an over one is ended already). With wait it
// returns g's result once g ended; without, the holder does not wait for
// others (it rolled back).
func (w *writer) end(g *group, wait bool) error {
	w.mu.Lock()
	g.members++
	if g.lost == nil && !g.over && len(w.queue) > 0 && g.members < maxGroup {
		w.giveLocked()
		w.mu.Unlock()
		if !wait {
			return nil
		}
		<-g.done
		return g.err
	}
	w.mu.Unlock()
	ctx := context.Background()
	err := g.lost
	if err == nil && !g.over {
		t0 := time.Now()
		_, err = w.phys.execContext(ctx, commitGroup, nil)
		writeCommitting.Add(int64(time.Since(t0)))
		if err != nil {
			err = fmt.Errorf("sqlitedb: commit a group of %d write transactions: %w", g.members, err)
		} else {
			writeCommits.Add(1)
		}
	}
	if err != nil {
		w.phys.execContext(ctx, abortGroup, nil) // may find none open
	}
	w.mu.Lock()
	g.err = err
	w.group = nil
	close(g.done)
	w.giveLocked()
	w.mu.Unlock()
	return err
}

// timeSQL counts the time since t0 in WriteStats.InSQL.
func timeSQL(t0 time.Time) { writeInSQL.Add(int64(time.Since(t0))) }

// vconn is a virtual connection of the write pool. database/sql uses it
// from one goroutine at a time.
type vconn struct {
	w  *writer
	tx *vtx // the open transaction
}

// Prepare returns a statement that runs its text through the connection,
// where the physical connection's cache prepares it once.
func (c *vconn) Prepare(query string) (driver.Stmt, error) {
	return &vstmt{c: c, sql: query}, nil
}

// PrepareContext is Prepare.
func (c *vconn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return c.Prepare(query)
}

// Close closes nothing: the physical connection is the writer's.
func (c *vconn) Close() error { return nil }

// Begin begins a transaction.
func (c *vconn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx waits for the turn and joins the open group as a member.
func (c *vconn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	if c.tx != nil {
		return nil, errors.New("sqlitedb: a transaction is already open on this connection")
	}
	w := c.w
	if err := w.take(ctx); err != nil {
		return nil, err
	}
	g, bare, err := w.join(ctx)
	if err != nil {
		return nil, err
	}
	t := &vtx{c: c, g: g, bare: bare}
	if sqltrace.Active() {
		t.start = w.phys.totalChanges(ctx)
		w.phys.emit(sqltrace.Begin, "", 0)
	}
	c.tx = t
	return t, nil
}

// ExecContext runs query in the open transaction, or alone: at once when
// no group is open, else as a member of one statement.
func (c *vconn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	w := c.w
	if t := c.tx; t != nil {
		defer timeSQL(time.Now())
		res, err := w.phys.ExecContext(context.WithoutCancel(ctx), query, args)
		if err != nil {
			t.failed = true
		}
		return res, err
	}
	if err := w.take(ctx); err != nil {
		return nil, err
	}
	if w.open() == nil {
		res, err := w.phys.ExecContext(ctx, query, args)
		w.release()
		return res, err
	}
	g, bare, err := w.join(ctx)
	if err != nil {
		return nil, err
	}
	res, err := w.phys.ExecContext(context.WithoutCancel(ctx), query, args)
	if ferr := w.finish(g, err == nil, bare, err != nil); err == nil {
		err = ferr
	}
	if gerr := w.end(g, err == nil); err == nil {
		err = gerr
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// QueryContext runs query as ExecContext does; alone or in a group of its
// own, the statement keeps the turn until its rows are closed.
func (c *vconn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	w := c.w
	if t := c.tx; t != nil {
		defer timeSQL(time.Now())
		rows, err := w.phys.QueryContext(context.WithoutCancel(ctx), query, args)
		if err != nil {
			t.failed = true
			return nil, err
		}
		if !t.bare {
			return rows, nil
		}
		return wrapRows(rows, func() { t.failed = true }, nil), nil
	}
	if err := w.take(ctx); err != nil {
		return nil, err
	}
	if w.open() == nil {
		rows, err := w.phys.QueryContext(ctx, query, args)
		if err != nil {
			w.release()
			return nil, err
		}
		return wrapRows(rows, nil, func() error { w.release(); return nil }), nil
	}
	g, bare, err := w.join(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := w.phys.QueryContext(context.WithoutCancel(ctx), query, args)
	if err != nil {
		w.finish(g, false, bare, true)
		w.end(g, false)
		return nil, err
	}
	failed := false
	return wrapRows(rows, func() { failed = true }, func() error {
		if err := w.finish(g, true, bare, failed); err != nil {
			w.end(g, false)
			return err
		}
		return w.end(g, true)
	}), nil
}

// Ping reports the connection alive: it is the physical connection's.
func (c *vconn) Ping(context.Context) error { return nil }

// ResetSession has nothing to reset.
func (c *vconn) ResetSession(context.Context) error { return nil }

// IsValid reports whether the connection may be reused.
func (c *vconn) IsValid() bool { return c.tx == nil }

// vtx is a member's transaction.
type vtx struct {
	c      *vconn
	g      *group
	bare   bool  // the group's first member, without a savepoint
	failed bool  // one of its statements failed
	start  int64 // total_changes() at its start, when traced
}

// Commit keeps the member's writes and returns once its group committed:
// nil when the group's COMMIT succeeded, its error otherwise.
func (t *vtx) Commit() error {
	w := t.c.w
	t.c.tx = nil
	var changed int64
	if sqltrace.Active() {
		changed = w.phys.totalChanges(context.Background()) - t.start
	}
	err := w.finish(t.g, true, t.bare, t.failed)
	if sqltrace.Active() {
		if err != nil {
			w.phys.emit(sqltrace.Rollback, "", 0)
		} else {
			w.phys.emit(sqltrace.Commit, "", changed)
		}
	}
	writeTxs.Add(1)
	if err != nil {
		w.end(t.g, false)
		return err
	}
	return w.end(t.g, true)
}

// Rollback undoes the member's writes, leaving the group's others.
func (t *vtx) Rollback() error {
	w := t.c.w
	t.c.tx = nil
	err := w.finish(t.g, false, t.bare, t.failed)
	if sqltrace.Active() {
		w.phys.emit(sqltrace.Rollback, "", 0)
	}
	writeTxs.Add(1)
	w.end(t.g, false)
	return err
}

// vstmt is a statement of a virtual connection: its text, run through
// the connection.
type vstmt struct {
	c   *vconn
	sql string
}

func (s *vstmt) Close() error  { return nil }
func (s *vstmt) NumInput() int { return -1 }

func (s *vstmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.ExecContext(context.Background(), s.sql, named(args))
}

func (s *vstmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.QueryContext(context.Background(), s.sql, named(args))
}

func (s *vstmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.sql, args)
}

func (s *vstmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.sql, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// wrapRows returns rows that call failed (when not nil) when Next fails
// other than at the end, and whose Close also calls after (when not nil),
// once; rows with column types keep them.
func wrapRows(rows driver.Rows, failed func(), after func() error) driver.Rows {
	if r, ok := rows.(richRows); ok {
		return &endRows{richRows: r, hooks: rowHooks{failed: failed, after: after}}
	}
	return &plainEndRows{Rows: rows, hooks: rowHooks{failed: failed, after: after}}
}

// rowHooks are the calls of wrapped rows.
type rowHooks struct {
	failed func()
	after  func() error
	once   sync.Once
}

func (h *rowHooks) next(err error) error {
	if err != nil && err != io.EOF && h.failed != nil {
		h.failed()
	}
	return err
}

func (h *rowHooks) close(err error) error {
	h.once.Do(func() {
		if h.after == nil {
			return
		}
		if aerr := h.after(); err == nil {
			err = aerr
		}
	})
	return err
}

type endRows struct {
	richRows
	hooks rowHooks
}

func (r *endRows) Next(dest []driver.Value) error { return r.hooks.next(r.richRows.Next(dest)) }
func (r *endRows) Close() error                   { return r.hooks.close(r.richRows.Close()) }

type plainEndRows struct {
	driver.Rows
	hooks rowHooks
}

func (r *plainEndRows) Next(dest []driver.Value) error { return r.hooks.next(r.Rows.Next(dest)) }
func (r *plainEndRows) Close() error                   { return r.hooks.close(r.Rows.Close()) }
