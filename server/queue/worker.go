package queue

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/trellis-agents/trellis/internal/txhook"
)

// reenqueueTimeout bounds the re-enqueue of a More result. It does not
// depend on the job's context, which may be ending (JobTimeout, a stop)
// exactly when the work left over must be recorded.
const reenqueueTimeout = 10 * time.Second

// worker works run jobs by calling Config.Advance.
type worker struct {
	river.WorkerDefaults[args]
	q *Queue
}

// Work calls Advance once and turns its Result into River's job outcome. It
// returns an error to River only to snooze: every other ending completes
// the job, so River never retries a run.
func (w *worker) Work(ctx context.Context, job *river.Job[args]) error {
	w.q.snoozes.forget(job.ID) // running again: this attempt may complete
	wctx, cancel := bounded(ctx, w.q.cfg.JobTimeout)
	defer cancel()
	// The run's finish completes the job in its own transaction (the
	// internal/txhook end hook): one write instead of two. A snooze cannot
	// follow a finish (Advance returns Done or More after one).
	var completed atomic.Bool
	actx := txhook.WithEnd(wctx, func(_ context.Context, tx any) error {
		if completed.Load() {
			return nil
		}
		if err := w.q.eng.completeIn(context.WithoutCancel(ctx), tx, job); err != nil {
			// Not fatal to the run's finish: the job is completed after it.
			w.q.cfg.Logger.WarnContext(ctx, "queue: completing the job with the run's finish failed; it is completed after it",
				slog.Int64("job_id", job.ID), slog.String("error", err.Error()))
			return nil
		}
		completed.Store(true)
		return nil
	})
	err := w.work(actx, job)
	if err == nil && !completed.Load() {
		w.completeNow(ctx, job)
	}
	return err
}

// completeNow writes the job's completion at once. River's completer
// would write it in its next batch, up to 250 ms later, and until then the
// job's row says running, so each Enqueue of the thread in that window
// would skip its slot and insert another job.
func (w *worker) completeNow(ctx context.Context, job *river.Job[args]) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reenqueueTimeout)
	defer cancel()
	if err := w.q.eng.complete(cctx, job); err != nil {
		// River's completer still completes it (Work returns nil).
		w.q.cfg.Logger.WarnContext(ctx, "queue: completing the job at once failed; River completes it in its next batch",
			slog.Int64("job_id", job.ID), slog.String("error", err.Error()))
	}
}

func (w *worker) work(ctx context.Context, job *river.Job[args]) error {
	a := job.Args
	log := w.q.cfg.Logger.With(slog.String("tenant", a.Tenant), slog.String("thread_id", a.ThreadID), slog.Int64("job_id", job.ID))
	res, err := w.advance(ctx, a.Tenant, a.ThreadID)
	if err != nil {
		log.ErrorContext(ctx, "queue: advancing the thread failed; the job completes and is not retried", slog.String("error", err.Error()))
		return nil
	}
	switch res.Outcome {
	case Done:
		return nil
	case Busy:
		d := res.After
		if d < 0 {
			log.ErrorContext(ctx, "queue: Advance returned Busy with a negative duration; snoozing for the default", slog.Duration("after", d))
			d = 0
		}
		if d == 0 {
			d = w.q.cfg.BusySnooze
		}
		w.q.snoozes.snoozed(job.ID, job.AttemptedAt)
		return river.JobSnooze(d)
	case More:
		// replace: a job of the thread snoozed while this one ran (it
		// found the thread busy) is replaced by one that starts at once.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reenqueueTimeout)
		defer cancel()
		if err := w.q.enqueue(ectx, replace, a.Tenant, a.ThreadID); err != nil {
			// The job itself stays to do the rest: a snooze keeps it (and
			// does not count as an attempt); the poll picks it up.
			log.ErrorContext(ctx, "queue: enqueueing the thread's pending work failed; the job snoozes instead", slog.String("error", err.Error()))
			w.q.snoozes.snoozed(job.ID, job.AttemptedAt)
			return river.JobSnooze(0)
		}
		return nil
	default:
		log.ErrorContext(ctx, "queue: Advance returned an unknown outcome; the job completes", slog.String("outcome", res.Outcome.String()))
		return nil
	}
}

// advance calls Config.Advance, turning a panic into an error.
func (w *worker) advance(ctx context.Context, tenant, threadID string) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the Advance function panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return w.q.cfg.Advance(ctx, tenant, threadID)
}
