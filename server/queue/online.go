package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// EnqueueOnline stores a sample to score; a worker of any process scores
// it, after a restart too. While a job of the same tenant, run and key
// exists (in any state but cancelled or discarded), it adds nothing.
func (q *Queue) EnqueueOnline(ctx context.Context, job OnlineJob) error {
	if q.cfg.Online == nil {
		return errors.New("queue: no Online function is configured")
	}
	if job.Tenant == "" || job.ThreadID == "" || job.RunID == "" || job.Key == "" {
		return fmt.Errorf("queue: bad online evaluator sample %+v", job)
	}
	_, err := q.eng.ops().insert(ctx, job, &river.InsertOpts{Queue: q.cfg.QueueName, MaxAttempts: DefaultOnlineAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue: enqueue the %q sample of run %s: %w", job.Key, job.RunID, err)
	}
	return nil
}
