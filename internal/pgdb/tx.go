package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is a transaction on one connection of a pool that saves round trips:
// its BEGIN is not sent on its own but with its first statement, and the
// statements queued with ExecLater, whose results nobody reads, go with
// the next statement sent or with the COMMIT. A transaction that sends no
// statement costs no round trip at all.
//
// Atomicity is PostgreSQL's: the BEGIN, the queued statements and the
// COMMIT travel in one pipeline with one Sync at its end, so a statement
// that fails makes the server skip the rest (the COMMIT included) and the
// transaction is rolled back. A queued statement that fails is reported
// by the call that sent it (the next statement's, or Commit), wrapped so
// that it names itself, and every later call of the transaction returns
// that error: no caller can take it for its own statement's failure and
// carry on.
//
// Tx implements pgx.Tx, so that code written for pgx (River's driver, the
// savers) runs in it unchanged. A nested transaction (Begin) is pgx's
// savepoint, begun once the queued statements are sent. Like pgx.Tx, a Tx
// is not safe for concurrent use.
type Tx struct {
	conn    *pgxpool.Conn
	pc      *pgx.Conn // conn's, kept for Conn after the release
	opts    pgx.TxOptions
	inner   pgx.Tx // the transaction once BEGIN was sent, else nil
	pending []queued
	failed  error // a BEGIN or queued statement failed: the transaction is lost
	closed  bool
	nested  int // savepoints open (Begin): ExecLater runs at once
}

type queued struct {
	sql  string
	args []any
}

var _ pgx.Tx = (*Tx)(nil)

// Begin acquires a connection of pool for a transaction with opts, which
// begins with the first statement sent on it. The caller ends it with
// Commit or Rollback, which give the connection back.
func Begin(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions) (*Tx, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{conn: c, pc: c.Conn(), opts: opts}, nil
}

// ExecLater queues sql to run in the transaction with the next statement
// sent or with the COMMIT; its result is not read, and its failure is
// reported by that later call (see Tx). While a savepoint begun with
// Begin is open, sql runs at once instead (a failure is then t's, as a
// queued one's), so that rolling back to the savepoint undoes exactly
// what ran after it.
func (t *Tx) ExecLater(ctx context.Context, sql string, args ...any) {
	if t.nested > 0 && t.failed == nil && !t.closed {
		if _, err := t.inner.Exec(ctx, sql, args...); err != nil {
			t.failed = &DeferredError{SQL: sql, Err: err}
		}
		return
	}
	t.pending = append(t.pending, queued{sql, args})
}

// usable reports why the transaction takes no more statements.
func (t *Tx) usable() error {
	switch {
	case t.closed:
		return pgx.ErrTxClosed
	case t.failed != nil:
		return t.failed
	}
	return nil
}

// direct reports whether a statement can go on the open transaction as
// it is: BEGIN sent and nothing queued.
func (t *Tx) direct() bool { return t.inner != nil && len(t.pending) == 0 }

// send sends, in one batch, the BEGIN when not sent yet, the queued
// statements and then b's own, and reads the results of all but b's. The
// caller reads b's results from the BatchResults returned and closes it.
// A BEGIN or queued statement that failed is returned as the error (with
// nil results) and kept in t.failed.
func (t *Tx) send(ctx context.Context, own []*pgx.QueuedQuery) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	begin := t.inner == nil
	if begin {
		b.BeginTx(t.opts)
	}
	for _, q := range t.pending {
		b.Queue(q.sql, q.args...)
	}
	pending := t.pending
	t.pending = nil
	b.QueuedQueries = append(b.QueuedQueries, own...)
	var br pgx.BatchResults
	if begin {
		br = t.conn.Conn().SendBatch(ctx, b)
		t.inner = br.Tx()
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			t.failed = fmt.Errorf("pgdb: begin: %w", err)
			return nil, t.failed
		}
	} else {
		br = t.inner.SendBatch(ctx, b)
	}
	for _, q := range pending {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			t.failed = &DeferredError{SQL: q.sql, Err: err}
			return nil, t.failed
		}
	}
	return br, nil
}

// DeferredError is the failure of a statement queued with ExecLater,
// reported by a later call of its transaction. It unwraps to that failure
// (a lost connection or a full disk is classified as such) except for an
// integrity violation (SQLSTATE class 23): that is not the later
// statement's, and a caller matching the error of its own statement (a
// unique violation that means "exists", say) must not match it.
type DeferredError struct {
	SQL string
	Err error
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("pgdb: a statement queued earlier in the transaction failed: %v", e.Err)
}

// Unwrap is the queued statement's error unless it is an integrity
// violation.
func (e *DeferredError) Unwrap() error {
	var pgErr *pgconn.PgError
	if errors.As(e.Err, &pgErr) && strings.HasPrefix(pgErr.Code, "23") {
		return nil
	}
	return e.Err
}

// Flush sends the BEGIN, when not sent yet, and the queued statements,
// and reads their results.
func (t *Tx) Flush(ctx context.Context) error {
	if err := t.usable(); err != nil {
		return err
	}
	if t.direct() {
		return nil
	}
	br, err := t.send(ctx, nil)
	if err != nil {
		return err
	}
	return br.Close()
}

// Exec runs sql, with the BEGIN and the queued statements ahead of it in
// one round trip when there are any.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.usable(); err != nil {
		return pgconn.CommandTag{}, err
	}
	if t.direct() {
		return t.inner.Exec(ctx, sql, args...)
	}
	br, err := t.send(ctx, []*pgx.QueuedQuery{{SQL: sql, Arguments: args}})
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query runs sql, with the BEGIN and the queued statements ahead of it in
// one round trip when there are any. The rows must be closed before the
// transaction is used again, as pgx's must.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	if t.direct() {
		return t.inner.Query(ctx, sql, args...)
	}
	br, err := t.send(ctx, []*pgx.QueuedQuery{{SQL: sql, Arguments: args}})
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is Query for one row; its Scan reports pgx.ErrNoRows when
// there is none, as pgx's does.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.usable(); err != nil {
		return &row{err: err}
	}
	if t.direct() {
		return t.inner.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	return &row{rows: rows, err: err}
}

// SendBatch sends b with the BEGIN and the queued statements ahead of its
// own in the same round trip; the results are b's alone.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.usable(); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if t.direct() {
		return t.inner.SendBatch(ctx, b)
	}
	br, err := t.send(ctx, b.QueuedQueries)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// Begin begins a nested transaction (a savepoint) once the queued
// statements are sent.
func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.Flush(ctx); err != nil {
		return nil, err
	}
	sp, err := t.inner.Begin(ctx)
	if err != nil {
		return nil, err
	}
	t.nested++
	return &savepoint{Tx: sp, parent: t}, nil
}

// savepoint is pgx's nested transaction, counted open in its parent
// until its first Commit or Rollback.
type savepoint struct {
	pgx.Tx
	parent *Tx
	done   bool
}

func (s *savepoint) close() {
	if !s.done {
		s.done = true
		s.parent.nested--
	}
}

func (s *savepoint) Commit(ctx context.Context) error {
	defer s.close()
	return s.Tx.Commit(ctx)
}

func (s *savepoint) Rollback(ctx context.Context) error {
	defer s.close()
	return s.Tx.Rollback(ctx)
}

// CopyFrom runs a COPY once the queued statements are sent.
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.Flush(ctx); err != nil {
		return 0, err
	}
	return t.inner.CopyFrom(ctx, table, columns, src)
}

// Prepare prepares a statement on the transaction's connection.
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	return t.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects returns pgx's large objects on the transaction. They run
// on a begun transaction, so it first sends the BEGIN and the queued
// statements, with context.Background() (LargeObjects takes no context).
// When those fail, the large objects are the failed transaction's: each
// call returns an error, and the transaction is lost as after any failed
// statement (Commit reports it). It panics only when the transaction
// ended before it sent anything: there is no transaction to use then.
func (t *Tx) LargeObjects() pgx.LargeObjects {
	_ = t.Flush(context.Background()) // a failure is kept in t.failed, for Commit
	if t.inner == nil {
		panic("pgdb: LargeObjects on a transaction that ended before it began")
	}
	return t.inner.LargeObjects()
}

// Conn is the transaction's connection (still the same one once the
// transaction ended, as pgx's dbTx gives it).
func (t *Tx) Conn() *pgx.Conn { return t.pc }

// Commit sends the queued statements and the COMMIT (and the BEGIN, when
// nothing was sent yet) in one round trip, and gives the connection back.
// A transaction that sent and queued nothing commits without a round
// trip. When anything failed the transaction is rolled back and the error
// returned; a COMMIT the server answers with ROLLBACK is
// pgx.ErrTxCommitRollback.
func (t *Tx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	if t.failed != nil {
		err := t.failed
		_ = t.Rollback(ctx)
		return err
	}
	if t.inner == nil && len(t.pending) == 0 {
		t.end()
		return nil
	}
	if t.direct() {
		err := t.inner.Commit(ctx)
		t.end()
		return err
	}
	commit := &pgx.QueuedQuery{SQL: "commit"}
	br, err := t.send(ctx, []*pgx.QueuedQuery{commit})
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if err != nil && t.conn.Conn().PgConn().TxStatus() != 'I' {
		t.abandon(ctx)
	}
	t.end()
	return err
}

// Rollback rolls the transaction back (nothing is sent when BEGIN was
// not) and gives the connection back.
func (t *Tx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.pending = nil
	var err error
	if t.inner != nil && t.conn.Conn().PgConn().TxStatus() != 'I' {
		if _, err = t.conn.Conn().Exec(ctx, "rollback"); err != nil {
			_ = t.conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}
	t.end()
	return err
}

// abandon rolls back a transaction whose commit failed, closing the
// connection when even that fails (the pool then drops it).
func (t *Tx) abandon(ctx context.Context) {
	if _, err := t.conn.Conn().Exec(context.WithoutCancel(ctx), "rollback"); err != nil {
		_ = t.conn.Conn().Close(context.WithoutCancel(ctx))
	}
}

// end closes t and gives its connection back to the pool.
func (t *Tx) end() {
	t.closed = true
	t.pending = nil
	t.conn.Release()
}

// batchRows are the rows of a statement sent at the end of a batch:
// closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

// Next closes the batch once the rows are read to their end, as pgx's
// rows close themselves then: the transaction can be used again without
// a Close.
func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// row is Query's first row, as pgx's QueryRow gives it.
type row struct {
	rows pgx.Rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
