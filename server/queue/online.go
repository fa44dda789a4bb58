package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// OnlineKind is River's job kind of online evaluator samples.
const OnlineKind = "trellis_online_eval"

// Online sample defaults.
const (
	// DefaultOnlineAttempts bounds the attempts to score one sample: an
	// attempt cut by a stopping replica, or by a database error, is tried
	// again on any replica.
	DefaultOnlineAttempts = 3
	// OnlineTimeout bounds one attempt to score a sample (a judge's model
	// call included).
	OnlineTimeout = 2 * time.Minute
)

// OnlineJob is one finished run to score with the online evaluator Key of
// its assistant. A (tenant, run, key) has one job, so a sample is scored
// once whichever replica finished the run or retried its hook.
type OnlineJob struct {
	Tenant   string `json:"tenant"`
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	Key      string `json:"key"`
}

// Kind is River's job kind of OnlineJob.
func (OnlineJob) Kind() string { return OnlineKind }

// OnlineFunc scores one sample; an error tries it again later, up to
// DefaultOnlineAttempts times. It must be idempotent (the feedback's
// derived ID makes it so).
type OnlineFunc func(ctx context.Context, job OnlineJob) error

// onlineWorker works online evaluator samples.
type onlineWorker struct {
	river.WorkerDefaults[OnlineJob]
	q *Queue
}

func (w *onlineWorker) Work(ctx context.Context, job *river.Job[OnlineJob]) error {
	ctx, cancel := bounded(ctx, OnlineTimeout)
	defer cancel()
	err := w.q.cfg.Online(ctx, job.Args)
	if err != nil {
		w.q.cfg.Logger.WarnContext(ctx, "queue: an online evaluator sample was not scored", "tenant", job.Args.Tenant, "run_id", job.Args.RunID,
			"key", job.Args.Key, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "error", err.Error())
	}
	return err
}

// Timeout is River's bound of a sample: OnlineTimeout plus the margin.
func (w *onlineWorker) Timeout(*river.Job[OnlineJob]) time.Duration {
	return OnlineTimeout + rescueMargin
}

// onlineOpts are the insert options of a sample: a (tenant, run, key)
// has one job while one exists in any state but cancelled or discarded.
func (q *Queue) onlineOpts() *river.InsertOpts {
	return &river.InsertOpts{Queue: q.cfg.QueueName, MaxAttempts: DefaultOnlineAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (q *Queue) checkOnline(job OnlineJob) error {
	if q.cfg.Online == nil {
		return errors.New("queue: no Online function is configured")
	}
	if job.Tenant == "" || job.ThreadID == "" || job.RunID == "" || job.Key == "" {
		return fmt.Errorf("queue: bad online evaluator sample %+v", job)
	}
	return nil
}

// EnqueueOnline stores a sample to score; a worker of any process scores
// it, after a restart too. While a job of the same tenant, run and key
// exists (in any state but cancelled or discarded), it adds nothing.
func (q *Queue) EnqueueOnline(ctx context.Context, job OnlineJob) error {
	if err := q.checkOnline(job); err != nil {
		return err
	}
	_, err := q.eng.ops().insert(ctx, job, q.onlineOpts())
	if err != nil {
		return fmt.Errorf("queue: enqueue the %q sample of run %s: %w", job.Key, job.RunID, err)
	}
	return nil
}

// EnqueueOnlineTx is EnqueueOnline of jobs in tx, the caller's open write
// transaction on the queue's database (*sql.Tx on SQLite, pgx.Tx on
// PostgreSQL): the samples commit with the caller's rows, or not at all.
// A failure leaves tx usable (on PostgreSQL the inserts run in a
// savepoint; a failed SQLite statement undoes only itself, and a job it
// left in tx is one a later EnqueueOnline of the same sample finds), so
// the caller may commit and enqueue the samples after its commit. On
// SQLite a job inserted this way may wait for River's next poll.
func (q *Queue) EnqueueOnlineTx(ctx context.Context, tx any, jobs []OnlineJob) error {
	if len(jobs) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, 0, len(jobs))
	for _, j := range jobs {
		if err := q.checkOnline(j); err != nil {
			return err
		}
		params = append(params, river.InsertManyParams{Args: j, InsertOpts: q.onlineOpts()})
	}
	var err error
	switch e := q.eng.(type) {
	case *pgEngine:
		ptx, ok := tx.(pgx.Tx)
		if !ok || ptx == nil {
			return fmt.Errorf("queue: enqueue samples of run %s: need a pgx.Tx, got %T", jobs[0].RunID, tx)
		}
		err = pgx.BeginFunc(ctx, ptx, func(sp pgx.Tx) error {
			_, err := e.client.InsertManyTx(ctx, sp, params)
			return err
		})
	case *sqliteEngine:
		stx, ok := tx.(*sql.Tx)
		if !ok || stx == nil {
			return fmt.Errorf("queue: enqueue samples of run %s: need a *sql.Tx, got %T", jobs[0].RunID, tx)
		}
		_, err = e.client.InsertManyTx(ctx, stx, params)
	default:
		err = fmt.Errorf("queue: this queue (%T) cannot insert in a caller's transaction", q.eng)
	}
	if err != nil {
		return fmt.Errorf("queue: enqueue %d samples of run %s in the caller's transaction: %w", len(jobs), jobs[0].RunID, err)
	}
	return nil
}
