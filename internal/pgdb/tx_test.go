package pgdb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// txPool is a traced pool on a scratch schema with a table t(id int
// primary key, v text).
func txPool(t *testing.T) (*pgxpool.Pool, *sqltrace.Recorder) {
	t.Helper()
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	t.Cleanup(stop)
	dsn, schema := pgdbtest.Schema(t)
	pool := connect(t, dsn, schema)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	rec.Take()
	return pool, rec
}

// begin starts a pgdb transaction on pool, failing the test when it
// cannot.
func begin(t *testing.T, pool *pgxpool.Pool) *pgdb.Tx {
	t.Helper()
	tx, err := pgdb.Begin(context.Background(), pool, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func rowCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A transaction's BEGIN goes with its first statement, its queued writes
// with its next statement and its COMMIT: three statements, two of them
// queued, a read between them and the commit are two round trips; a transaction that sends
// nothing takes none.
func TestTxRoundTrips(t *testing.T) {
	pool, rec := txPool(t)
	ctx := context.Background()

	tx, err := pgdb.Begin(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a')`)
	var v string
	if err := tx.QueryRow(ctx, `SELECT v FROM t WHERE id = $1`, 1).Scan(&v); err != nil || v != "a" {
		t.Fatalf("read of the queued insert: %q, %v", v, err)
	}
	tx.ExecLater(ctx, `INSERT INTO t VALUES (2, 'b')`)
	tx.ExecLater(ctx, `UPDATE t SET v = 'c' WHERE id = 1`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sum := sqltrace.Summarize(rec.Take(), nil)
	if sum.WriteTx != 1 || sum.Statements != 4 || sum.Trips != 2 {
		t.Errorf("got %d write transactions, %d statements, %d round trips; want 1, 4, 2", sum.WriteTx, sum.Statements, sum.Trips)
	}
	if n := rowCount(t, pool); n != 2 {
		t.Errorf("%d rows committed, want 2", n)
	}
	if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Errorf("a second Commit: %v, want ErrTxClosed", err)
	}
	rec.Take()

	empty := begin(t, pool)
	if err := empty.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if sum := sqltrace.Summarize(rec.Take(), nil); sum.Trips != 0 {
		t.Errorf("an empty transaction took %d round trips, want 0", sum.Trips)
	}
	if pool.Stat().AcquiredConns() != 0 {
		t.Errorf("%d connections still acquired after the commits", pool.Stat().AcquiredConns())
	}
}

// A queued write that fails fails the transaction: the commit reports it
// and nothing is stored, not even the statements that succeeded; a later
// statement gets the queued one's error, which does not pass for a unique
// violation of its own.
func TestTxQueuedFailure(t *testing.T) {
	pool, _ := txPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO t VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}

	tx := begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (2, 'b')`)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'dup')`)
	err := tx.Commit(ctx)
	var de *pgdb.DeferredError
	if !errors.As(err, &de) {
		t.Fatalf("commit after a failing queued insert: %v, want a DeferredError", err)
	}
	if n := rowCount(t, pool); n != 1 {
		t.Errorf("%d rows after the failed commit, want 1", n)
	}

	tx = begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'dup')`)
	_, err = tx.Exec(ctx, `INSERT INTO t VALUES (3, 'c')`)
	var pgErr *pgconn.PgError
	if err == nil || errors.As(err, &pgErr) {
		t.Errorf("a statement after a failing queued one: %v, want an error that is not a PgError", err)
	}
	if _, err2 := tx.Exec(ctx, `SELECT 1`); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("the next statement: %v, want the queued failure again", err2)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Error("commit of a failed transaction succeeded")
	}
	if n := rowCount(t, pool); n != 1 {
		t.Errorf("%d rows after the failed transaction, want 1", n)
	}
	if pool.Stat().AcquiredConns() != 0 {
		t.Errorf("%d connections still acquired", pool.Stat().AcquiredConns())
	}
}

// Rollback drops what is queued; a statement's own failure is its own
// (a unique violation), and a savepoint after queued writes sends them
// first and can be rolled back to, keeping them.
func TestTxRollbackAndSavepoint(t *testing.T) {
	pool, _ := txPool(t)
	ctx := context.Background()

	tx := begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a')`)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, pool); n != 0 {
		t.Errorf("%d rows after a rollback, want 0", n)
	}

	tx = begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a')`)
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, `INSERT INTO t VALUES (1, 'again')`)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("a duplicate in a savepoint: %v, want a unique violation", err)
	}
	tx.ExecLater(ctx, `INSERT INTO t VALUES (2, 'b')`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, pool); n != 2 {
		t.Errorf("%d rows, want 2: the queued writes around a rolled-back savepoint", n)
	}
}

// A batch sent on the transaction carries the BEGIN and the queued writes
// ahead of its own statements; its results are its own.
func TestTxSendBatch(t *testing.T) {
	pool, rec := txPool(t)
	ctx := context.Background()
	tx := begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a')`)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO t VALUES (2, 'b')`)
	b.Queue(`SELECT count(*) FROM t`)
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("the batch's first result: %v, %v", tag, err)
	}
	var n int
	if err := br.QueryRow().Scan(&n); err != nil || n != 2 {
		t.Fatalf("the batch's count: %d, %v; want 2", n, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if sum := sqltrace.Summarize(rec.Take(), nil); sum.Trips != 2 {
		t.Errorf("%d round trips, want 2 (the batch, the commit)", sum.Trips)
	}
}

// A write queued while a savepoint is open runs inside it: rolling back
// to the savepoint undoes it.
func TestTxQueuedInSavepoint(t *testing.T) {
	pool, _ := txPool(t)
	ctx := context.Background()
	tx := begin(t, pool)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'in the savepoint')`)
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx.ExecLater(ctx, `INSERT INTO t VALUES (2, 'after it')`)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []int
	rows, _ := pool.Query(ctx, `SELECT id FROM t ORDER BY id`)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(ids) != 1 || ids[0] != 2 {
		t.Errorf("rows %v (%v), want [2]: the write queued in the rolled-back savepoint is undone", ids, err)
	}
}

// Rows read to their end free the connection without a Close, as pgx's
// do, when they came back in a batch with queued writes.
func TestTxRowsReadToTheEnd(t *testing.T) {
	pool, _ := txPool(t)
	ctx := context.Background()
	tx := begin(t, pool)
	defer func() { _ = tx.Rollback(ctx) }()
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	rows, err := tx.Query(ctx, `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 2 {
		t.Fatalf("%d rows, %v; want 2", n, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (3, 'c')`); err != nil {
		t.Fatalf("a statement after rows read to their end, not closed: %v", err)
	}
	rows.Close()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, pool); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}

// LargeObjects sends the BEGIN and the queued statements, then works on
// the open transaction: an object written in it is there after the
// commit, with the queued insert. After a queued statement failed, its
// calls fail and the commit reports the failure.
func TestTxLargeObjects(t *testing.T) {
	pool, _ := txPool(t)
	ctx := context.Background()
	tx := begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'a')`)
	lo := tx.LargeObjects()
	oid, err := lo.Create(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := lo.Open(ctx, oid, pgx.LargeObjectModeWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obj.Write([]byte("large")); err != nil {
		t.Fatal(err)
	}
	if err := obj.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, pool); n != 1 {
		t.Errorf("%d rows after the commit, want the queued insert's 1", n)
	}
	var data []byte
	if err := pool.QueryRow(ctx, `SELECT lo_get($1)`, oid).Scan(&data); err != nil || string(data) != "large" {
		t.Errorf("the large object after the commit: %q, %v; want \"large\"", data, err)
	}
	if _, err := pool.Exec(ctx, `SELECT lo_unlink($1)`, oid); err != nil {
		t.Fatal(err)
	}

	tx = begin(t, pool)
	tx.ExecLater(ctx, `INSERT INTO t VALUES (1, 'dup')`)
	lo = tx.LargeObjects()
	if _, err := lo.Create(ctx, 0); err == nil {
		t.Error("Create after a failed queued insert succeeded")
	}
	if err := tx.Commit(ctx); err == nil {
		t.Error("the commit after a failed queued insert succeeded")
	}
	if pool.Stat().AcquiredConns() != 0 {
		t.Errorf("%d connections still acquired", pool.Stat().AcquiredConns())
	}
}
