package sqlitedb

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// A write transaction through database/sql (db.Write.BeginTx, tx.Stmt,
// Exec, Commit) costs a context and a goroutine per transaction (the Tx
// watches its context), a statement object per tx.Stmt and the
// conversion of every argument, on top of SQLite's own work: for a
// durable step (one INSERT) a tenth of its instructions. WriteTx
// runs a transaction on the write connection directly: the same turn,
// group and statement cache as a transaction of the Write pool, and the
// same durability (it returns after its group's COMMIT), without
// database/sql in between.

// Direct is the handle of a transaction WriteTx runs: its statements run
// on the physical write connection, in the transaction. It is valid only
// during the function WriteTx calls, from that function's goroutine.
type Direct struct {
	w      *writer
	failed bool // one of its statements failed
	args   []driver.NamedValue
	buf    [8]driver.NamedValue // args' first backing array
}

// Exec runs query in the transaction with args, which must be driver
// values (int64, float64, bool, []byte, string, time.Time or nil), and
// returns the number of rows it changed. The query's prepared statement is
// cached by the connection.
func (d *Direct) Exec(query string, args ...any) (int64, error) {
	defer timeSQL(time.Now())
	d.args = d.args[:0]
	for i, a := range args {
		d.args = append(d.args, driver.NamedValue{Ordinal: i + 1, Value: a})
	}
	res, err := d.w.phys.ExecContext(context.Background(), query, d.args)
	clear(d.args) // drop the references to the caller's values
	if err != nil {
		d.failed = true
		return 0, err
	}
	return res.RowsAffected()
}

// WriteTx runs fn in a write transaction (ErrClosed after Close) and commits it when fn returns
// nil, returning after its group's COMMIT (as a Write pool transaction's
// Commit does), or rolls it back when fn returns an error or panics, and
// returns that error. Like a Write pool transaction it waits for the
// write turn first (until ctx is done) and must not wait, inside fn, for
// another write transaction. ctx bounds the wait for the turn only;
// statements run to completion.
func (db *DB) WriteTx(ctx context.Context, fn func(d *Direct) error) (err error) {
	if db.done.Load() {
		return ErrClosed
	}
	w := db.f.writer
	if err := w.take(ctx); err != nil {
		return err
	}
	g, bare, err := w.join(ctx)
	if err != nil {
		return err
	}
	traced := sqltrace.Active()
	var start int64
	if traced {
		start = w.phys.totalChanges(ctx)
		w.phys.emit(sqltrace.Begin, "", 0)
	}
	d := &Direct{w: w}
	d.args = d.buf[:0]
	ended := false
	defer func() {
		if ended {
			return
		}
		// fn panicked: undo its writes and give up the turn.
		w.finish(g, false, bare, d.failed)
		writeTxs.Add(1)
		w.end(g, false)
	}()
	err = fn(d)
	ended = true
	writeTxs.Add(1)
	if err != nil {
		w.finish(g, false, bare, d.failed)
		if traced {
			w.phys.emit(sqltrace.Rollback, "", 0)
		}
		w.end(g, false)
		return err
	}
	var changed int64
	if traced {
		changed = w.phys.totalChanges(context.Background()) - start
	}
	if err := w.finish(g, true, bare, d.failed); err != nil {
		if traced {
			w.phys.emit(sqltrace.Rollback, "", 0)
		}
		w.end(g, false)
		return err
	}
	if traced {
		w.phys.emit(sqltrace.Commit, "", changed)
	}
	return w.end(g, true)
}
