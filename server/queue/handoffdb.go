package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// quietInserter is an engine that can insert a job without waking this
// process's River workers (sqliteEngine).
type quietInserter interface {
	insertQuiet(ctx context.Context, a river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// insertQuiet is River's Insert without its wake-up of this process's
// workers, for a hand-off's row, which is scheduled a window ahead: no
// worker could fetch it, and on SQLite the wake-up makes River's producer
// fetch anyway, a write transaction (JobGetAvailable) that finds nothing
// and holds the database's write lock just when the run's first write
// wants it. The job is inserted by InsertTx in a transaction of River's
// driver, so the commit hook ctx carries (EnqueueWith's rows) runs in it
// exactly as in Insert's own transaction.
func (e *sqliteEngine) insertQuiet(ctx context.Context, a river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	d := e.client.Driver()
	tx, err := d.GetExecutor().Begin(ctx)
	if err != nil {
		return nil, err
	}
	res, err := e.client.InsertTx(ctx, d.UnwrapTx(tx), a, opts)
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx)) // after a failed commit, a no-op
		return nil, err
	}
	return res, nil
}

// handoffRowSQL deletes a handed-off job's row if it is still as inserted:
// scheduled and never attempted. A row another process made due (JobRetry),
// or that River fetched since, is River's and is left alone. River's
// JobDelete cannot say this: it deletes a row in any state but running.
const handoffRowSQL = ` WHERE id = %s AND state = 'scheduled' AND attempted_at IS NULL`

// deleteHandoff deletes the row of a handed-off job in tx, the caller's
// open write transaction; it reports whether it was still ours. A failing
// statement leaves a SQLite transaction usable.
func (e *sqliteEngine) deleteHandoff(ctx context.Context, tx any, id int64) (bool, error) {
	stx, ok := tx.(*sql.Tx)
	if !ok || stx == nil {
		return false, fmt.Errorf("queue: delete handed-off job %d: need a *sql.Tx, got %T", id, tx)
	}
	return sqliteDeleteHandoff(ctx, stx, id)
}

// deleteHandoffNow is deleteHandoff in a statement of its own.
func (e *sqliteEngine) deleteHandoffNow(ctx context.Context, id int64) (bool, error) {
	return sqliteDeleteHandoff(ctx, e.db, id)
}

func sqliteDeleteHandoff(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, id int64) (bool, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM river_job`+fmt.Sprintf(handoffRowSQL, "?"), id)
	if err != nil {
		return false, fmt.Errorf("queue: delete handed-off job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// extendHandoff sets the scheduled time of a handed-off job's row to
// until, if the row is still as inserted; it reports whether it was.
func (e *sqliteEngine) extendHandoff(ctx context.Context, id int64, until time.Time) (bool, error) {
	// River's SQLite driver stores times as this text, which compares
	// with its own.
	at := until.UTC().Round(time.Millisecond).Format("2006-01-02 15:04:05.000")
	res, err := e.db.ExecContext(ctx, `UPDATE river_job SET scheduled_at = ?`+fmt.Sprintf(handoffRowSQL, "?"), at, id)
	if err != nil {
		return false, fmt.Errorf("queue: push back handed-off job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// extendHandoff sets the scheduled time of a handed-off job's row to
// until, if the row is still as inserted; it reports whether it was.
func (e *pgEngine) extendHandoff(ctx context.Context, id int64, until time.Time) (bool, error) {
	tag, err := e.pool.Exec(ctx, `UPDATE `+e.jobTable()+` SET scheduled_at = $2`+fmt.Sprintf(handoffRowSQL, "$1"), id, until)
	if err != nil {
		return false, fmt.Errorf("queue: push back handed-off job %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// jobTable is River's job table, schema-qualified when Config.Schema is set.
func (e *pgEngine) jobTable() string {
	if e.schema == "" {
		return "river_job"
	}
	return pgx.Identifier{e.schema, "river_job"}.Sanitize()
}

// handoffSavepoint is the savepoint deleteHandoff's statement runs in.
const handoffSavepoint = "trellis_handoff_delete"

// deleteHandoff deletes the row of a handed-off job in tx, the caller's
// open write transaction, in a savepoint so that a failure leaves tx
// usable; it reports whether the row was still ours.
//
// The savepoint, the delete and the savepoint's release go as one batch:
// one round trip instead of three, in the run's finish transaction, whose
// connection other runs wait for when the pool is busy. A delete that
// fails once the savepoint is made (a lock or statement timeout, a
// deadlock with River's own statements on the row) makes the server skip
// the release, and a second batch rolls back to the savepoint and
// releases it, as pgx's nested transaction did: tx stays usable. The one
// difference from three round trips: pgx prepares a batch's statements
// before it runs any of them (once per connection), so a delete that
// cannot even be prepared (River's table is gone) aborts tx before the
// savepoint exists, and the caller's commit fails.
func (e *pgEngine) deleteHandoff(ctx context.Context, tx any, id int64) (bool, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return false, fmt.Errorf("queue: delete handed-off job %d: need a pgx.Tx, got %T", id, tx)
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT ` + handoffSavepoint)
	b.Queue(`DELETE FROM `+e.jobTable()+fmt.Sprintf(handoffRowSQL, "$1"), id)
	b.Queue(`RELEASE SAVEPOINT ` + handoffSavepoint)
	br := ptx.SendBatch(ctx, b)
	var n int64
	_, err := br.Exec()
	saved := err == nil
	if saved {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		n = tag.RowsAffected()
		if err == nil {
			_, err = br.Exec()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if saved {
			err = errors.Join(err, rollbackHandoffSavepoint(ctx, ptx))
		}
		return false, fmt.Errorf("queue: delete handed-off job %d: %w", id, err)
	}
	return n == 1, nil
}

// rollbackHandoffSavepoint undoes what deleteHandoff's savepoint holds and
// releases it, leaving tx as it was before the savepoint: one statement
// string without arguments, which pgx sends as a simple query (an aborted
// transaction refuses to prepare the release).
func rollbackHandoffSavepoint(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT `+handoffSavepoint+`; RELEASE SAVEPOINT `+handoffSavepoint); err != nil {
		return fmt.Errorf("roll back to the savepoint: %w", err)
	}
	return nil
}

// deleteHandoffNow is deleteHandoff in a statement of its own.
func (e *pgEngine) deleteHandoffNow(ctx context.Context, id int64) (bool, error) {
	tag, err := e.pool.Exec(ctx, `DELETE FROM `+e.jobTable()+fmt.Sprintf(handoffRowSQL, "$1"), id)
	if err != nil {
		return false, fmt.Errorf("queue: delete handed-off job %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}
