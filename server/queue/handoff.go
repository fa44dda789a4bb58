package queue

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/internal/hoptrace"
	"github.com/trellis-agents/trellis/server/internal/repeat"
)

// The in-process hand-off: a job EnqueueWith inserts fresh is worked by a
// goroutine of this process, with no fetch by River and no completion by
// River's completer.
//
// The job is inserted scheduled at the end of the hand-off window
// (Config.HandoffWindow), so no River worker, here or in another process,
// fetches it while this process works it; it keeps its deduplication slot
// like any waiting job. The goroutine calls Advance as worker.Work does;
// the run's finish deletes the row in its own transaction (the txhook end
// hook), where a fetched job would be completed. The delete is our own
// conditional statement: only a row still scheduled and never attempted
// is ours (handoffRowSQL); a row another process made due (JobRetry) or
// River ran since belongs to River, which works it as any job.
//
// If this process dies, the row comes due at the window's end, or sooner
// when the service's sweeper enqueues the thread (a waiting job found in
// its slot is made due at once), and River works it anywhere: correctness
// never depends on the goroutine, since Advance is idempotent.
//
// A request of this process that finds the row in its slot (coalesce) does
// not make it due: it marks the hand-off (absorb), and the goroutine calls
// Advance again after the call in progress returns, keeping the row until
// then, or enqueues the thread once its row is gone.

// handoffs are the hand-offs of one Queue.
type handoffs struct {
	mu       sync.Mutex
	entries  map[int64]*handoff
	free     int  // slots left
	stopping bool // Stop began: no new hand-off
	wg       sync.WaitGroup
	stopCh   chan struct{}      // closed when Stop begins
	ctx      context.Context    // the goroutines' context, cut by a hard stop
	cancel   context.CancelFunc // cuts ctx
	// drop, set by tests, discards a hand-off instead of starting its
	// goroutine: a process that died right after the commit.
	drop bool
}

// handoff is one job worked by a goroutine of this process.
type handoff struct {
	job            *rivertype.JobRow
	tenant, thread string
	started        time.Time
	wake           chan struct{} // a request was absorbed, or the row was released
	// Under handoffs.mu:
	rerun    bool // a request was absorbed: Advance again after this call
	released bool // another enqueue deleted the row (replace): its job stands for the thread
	closed   bool // the goroutine is done with the row; absorb no longer
}

func (h *handoffs) init(slots int) {
	h.free = slots
	h.entries = make(map[int64]*handoff)
	h.stopCh = make(chan struct{})
	h.ctx, h.cancel = context.WithCancel(context.Background())
}

// acquire takes a slot for a hand-off; false when none is free or the
// queue is stopping. A taken slot is given back by unused or by the
// goroutine's end.
func (h *handoffs) acquire() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopping || h.free <= 0 {
		return false
	}
	h.free--
	h.wg.Add(1)
	return true
}

// unused gives back a slot acquire took that no hand-off used.
func (h *handoffs) unused() {
	h.mu.Lock()
	h.free++
	h.mu.Unlock()
	h.wg.Done()
}

// absorb reports whether job, a row found in a thread's slot, is a
// hand-off of this process whose goroutine will call Advance again after
// the call in progress (or enqueue the thread): then it stands for the
// request, which it marks.
func (h *handoffs) absorb(job *rivertype.JobRow) bool {
	if job.State != rivertype.JobStateScheduled || job.AttemptedAt != nil {
		return false // not the row as inserted: River has it
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[job.ID]
	if e == nil || e.closed || e.released {
		return false
	}
	e.rerun = true
	e.signal()
	return true
}

// released records that the row of job id was deleted by an enqueue that
// put a new job in its slot.
func (h *handoffs) released(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.entries[id]; e != nil {
		e.released = true
		e.signal()
	}
}

func (e *handoff) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// take returns and clears the marks the goroutine acts on.
func (h *handoffs) take(e *handoff) (rerun, released bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rerun, released = e.rerun, e.released
	e.rerun = false
	select {
	case <-e.wake: // told already
	default:
	}
	return rerun, released
}

// close ends absorbing for e and reports whether a request was absorbed
// since take.
func (h *handoffs) close(e *handoff) (rerun bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.closed = true
	return e.rerun && !e.released
}

// done forgets e and frees its slot.
func (h *handoffs) done(e *handoff) {
	h.mu.Lock()
	delete(h.entries, e.job.ID)
	h.free++
	h.mu.Unlock()
	h.wg.Done()
}

// beginStop refuses new hand-offs and tells Busy waits to hand their jobs
// back to River.
func (h *handoffs) beginStop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.stopping {
		h.stopping = true
		close(h.stopCh)
	}
}

// wait waits for the goroutines to return, up to ctx.
func (h *handoffs) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launch starts the goroutine working job, inserted by EnqueueWith on a
// slot acquire took.
func (q *Queue) launch(job *rivertype.JobRow, tenant, thread string) {
	e := &handoff{job: job, tenant: tenant, thread: thread, started: time.Now(), wake: make(chan struct{}, 1)}
	h := &q.hand
	h.mu.Lock()
	if h.drop {
		h.mu.Unlock()
		h.unused()
		return
	}
	h.entries[job.ID] = e
	h.mu.Unlock()
	go q.runHandoff(e)
}

// runHandoff works a handed-off job: Advance, then the outcome as
// worker.work treats it, with the row deleted instead of completed.
func (q *Queue) runHandoff(e *handoff) {
	hoptrace.Mark("handoff")
	defer q.hand.done(e)
	defer q.keepScheduled(e)()
	log := q.cfg.Logger.With(slog.String("tenant", e.tenant), slog.String("thread_id", e.thread), slog.Int64("job_id", e.job.ID))
	w := &worker{q: q}
	for {
		res, err, deleted := q.advanceHandoff(w, e)
		rerun, released := q.hand.take(e)
		if released {
			// Our row was replaced by a job that starts after this call
			// began: it stands for everything, the marks included.
			q.hand.close(e)
			return
		}
		if q.hand.ctx.Err() != nil && !deleted {
			// Cut by a hard stop: the row is left for River (due at the
			// window's end, or when the thread is enqueued again) and the
			// run for the service to resume.
			q.hand.close(e)
			return
		}
		if err != nil {
			log.ErrorContext(q.hand.ctx, "queue: advancing the thread failed; the handed-off job ends and is not retried", slog.String("error", err.Error()))
			// The end hook may have run in a transaction that rolled
			// back: delete again (a no-op if the row is gone).
			deleted = false
			res = Result{Outcome: Done}
		}
		switch res.Outcome {
		case Busy:
			if deleted {
				q.finishHandoff(e, true, rerun, log)
				return
			}
			d := res.After
			if d <= 0 {
				d = q.cfg.BusySnooze
			}
			if !q.busyWait(e, d) {
				q.handBack(e, log)
				return
			}
		case More:
			ectx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
			err := q.enqueue(ectx, replace, e.tenant, e.thread)
			cancel()
			if err == nil {
				// The new job starts after this call: it stands for any
				// request absorbed before.
				q.finishHandoff(e, deleted, false, log)
				return
			}
			log.ErrorContext(q.hand.ctx, "queue: enqueueing the thread's pending work failed; the handed-off job does it", slog.String("error", err.Error()))
			if !deleted {
				q.handBack(e, log)
				return
			}
			// The row is gone: Advance again here after a pause (when the
			// queue stops first, the service's sweeper finds the work).
			if !q.busyWait(e, q.cfg.BusySnooze) {
				q.finishHandoff(e, true, rerun, log)
				return
			}
		default: // Done, or an unknown outcome
			if res.Outcome != Done {
				log.ErrorContext(q.hand.ctx, "queue: Advance returned an unknown outcome; the handed-off job ends", slog.String("outcome", res.Outcome.String()))
			}
			if rerun && !deleted {
				continue // the row still stands for the absorbed request
			}
			q.finishHandoff(e, deleted, rerun, log)
			return
		}
	}
}

// keepScheduled pushes the row's scheduled time a window ahead every
// third of the window while the hand-off lasts, so that no River worker
// fetches a job this process is still working; it stops when the row is no
// longer as inserted. A run shorter than a third of the window writes
// nothing for it. The returned function stops it, waiting for a write in
// progress.
func (q *Queue) keepScheduled(e *handoff) (stop func()) {
	every := q.cfg.HandoffWindow / 3
	return repeat.Every(every, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), every)
		ours, err := q.eng.extendHandoff(ctx, e.job.ID, q.handoffUntil())
		cancel()
		if err != nil {
			q.cfg.Logger.Warn("queue: pushing back a handed-off job failed; River may work it beside this process once its window ends",
				slog.Int64("job_id", e.job.ID), slog.String("error", err.Error()))
			return true
		}
		return ours // not ours: River's now, or gone
	})
}

// advanceHandoff calls Advance once for e, with the end hook that deletes
// the row in the run's finish transaction; deleted reports that the hook
// did so (or found the row no longer ours).
func (q *Queue) advanceHandoff(w *worker, e *handoff) (res Result, err error, deleted bool) {
	wctx, cancel := bounded(q.hand.ctx, q.cfg.JobTimeout)
	defer cancel()
	var del atomic.Bool
	actx := txhook.WithEnd(wctx, func(ctx context.Context, tx any) error {
		if del.Load() {
			return nil
		}
		q.hand.mu.Lock()
		keep := e.rerun
		q.hand.mu.Unlock()
		if keep {
			return nil // a request was absorbed: the row stands for it until Advance runs again
		}
		if _, err := q.eng.deleteHandoff(context.WithoutCancel(ctx), tx, e.job.ID); err != nil {
			q.cfg.Logger.WarnContext(ctx, "queue: deleting the handed-off job with the run's finish failed; it is deleted after it",
				slog.Int64("job_id", e.job.ID), slog.String("error", err.Error()))
			return nil
		}
		del.Store(true)
		return nil
	})
	res, err = w.advance(actx, e.tenant, e.thread)
	return res, err, del.Load()
}

// handoffUntil is the scheduled time of a handed-off row written now: the
// window from now, plus River's scheduler interval, since the scheduler
// makes jobs available that far ahead of their time.
func (q *Queue) handoffUntil() time.Time {
	return time.Now().Add(q.cfg.HandoffWindow + schedulerLookahead)
}

// schedulerLookahead is River's JobScheduler interval, by which it makes
// scheduled jobs available ahead of their time (River's default, 5 s; a
// fetch still waits for the time itself).
const schedulerLookahead = 5 * time.Second

// busyWait waits d, or less when a request is absorbed or the row is
// released; false when the job must go back to River instead (the queue
// is stopping, or half the window has passed).
func (q *Queue) busyWait(e *handoff, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.wake:
	case <-q.hand.stopCh:
		return false
	}
	return time.Since(e.started) < q.cfg.HandoffWindow/2
}

// finishHandoff ends a hand-off whose Advance is done: the row is deleted
// unless already, then a request absorbed during that Advance (rerun, as
// take returned it) or since is enqueued.
func (q *Queue) finishHandoff(e *handoff, deleted, rerun bool, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
	defer cancel()
	if !deleted {
		if _, err := q.eng.deleteHandoffNow(ctx, e.job.ID); err != nil {
			// Harmless: the row comes due at the window's end and its
			// Advance finds nothing to do.
			log.WarnContext(ctx, "queue: deleting the handed-off job failed; it runs once more at the end of its window", slog.String("error", err.Error()))
		}
	}
	if q.hand.close(e) || rerun {
		if err := q.enqueue(ctx, coalesce, e.tenant, e.thread); err != nil {
			log.ErrorContext(ctx, "queue: enqueueing a request that arrived during the handed-off job failed", slog.String("error", err.Error()))
		}
	}
}

// handBack gives the row to River: it is made due now, so a worker here
// or elsewhere fetches it (and snoozes it, if the thread is still busy).
func (q *Queue) handBack(e *handoff, log *slog.Logger) {
	q.hand.close(e)
	ctx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
	defer cancel()
	if _, err := q.eng.ops().retry(ctx, e.job.ID); err != nil {
		log.WarnContext(ctx, "queue: handing the job back to River failed; it comes due at the end of its window", slog.String("error", err.Error()))
	}
}
