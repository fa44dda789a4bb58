package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/internal/hoptrace"
	"github.com/trellis-agents/trellis/server/internal/repeat"
)

// The in-process hand-off: a thread EnqueueWith would insert a job for is
// worked by a goroutine of this process instead, with no River job at all.
//
// What insures the work against this process dying is not a job row but
// the run's pre-claim: EnqueueWith opens the write transaction itself and
// asks the caller's statements to write, with the run, a lease for it
// (txhook.PreClaim; owner Config.Owner, token 0, expiring a window
// ahead; the store keeps it on the run's row). The run's claim replaces
// it with its own lease, and the run's finish ends it as any lease. If this process dies before the claim, the service's lease
// sweeper finds the pre-claim expired and enqueues the thread through
// River, which runs the run anywhere; after the claim, the run's lease and
// the sweeper's take-over cover it as for any run. Correctness never
// depends on the goroutine: Advance is idempotent.
//
// A caller whose statements write no pre-claim (it stored no run that may
// start now) gets a River job inserted in the same transaction instead,
// as EnqueueTx would.
//
// Hand-offs are kept by thread. A second EnqueueWith of a thread whose
// hand-off is still working is absorbed by it: its goroutine calls Advance
// again after the call in progress returns (which may have read the
// thread before the second run was stored), and the second run's own
// pre-claim insures it meanwhile. While a hand-off lasts its goroutine
// renews the pre-claims of the runs it stands for that are not claimed
// yet, every third of the window (Config.PreClaims).

// PreClaimRenewer renews the pre-claim of a run a hand-off stands for
// (the service's store, db.PreClaimer).
type PreClaimRenewer interface {
	// RenewPreClaim sets the pre-claim's expiry to until while owner holds
	// it and reports whether it did: false once the run was claimed, or
	// the pre-claim is gone.
	RenewPreClaim(ctx context.Context, tenant, runID, owner string, until time.Time) (bool, error)
	// ReleasePreClaim deletes the run's pre-claim while owner holds it,
	// so that any process may claim the run at once: a process claims no
	// run whose live pre-claim is another's.
	ReleasePreClaim(ctx context.Context, tenant, runID, owner string) (bool, error)
}

// handoffs are the hand-offs of one Queue.
type handoffs struct {
	mu       sync.Mutex
	open     map[threadKey]*handoff // each thread's hand-off still absorbing
	free     int                    // slots left
	stopping bool                   // Stop began: no new hand-off
	wg       sync.WaitGroup
	stopCh   chan struct{}      // closed when Stop begins
	ctx      context.Context    // the goroutines' context, cut by a hard stop
	cancel   context.CancelFunc // cuts ctx
	// drop, set by tests, discards a hand-off instead of starting its
	// goroutine: a process that died right after the commit.
	drop bool
}

// threadKey names a thread of a tenant.
type threadKey struct{ tenant, thread string }

// handoff is one thread worked by a goroutine of this process.
type handoff struct {
	key     threadKey
	started time.Time
	wake    chan struct{} // a request was absorbed
	// Under handoffs.mu:
	rerun  bool            // a request was absorbed: Advance again after this call
	closed bool            // the goroutine no longer absorbs requests
	claims []txhook.RunKey // pre-claims to renew (runs not known to be claimed)
}

func (h *handoffs) init(slots int) {
	h.free = slots
	h.open = make(map[threadKey]*handoff)
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

func (e *handoff) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// take returns and clears the mark of an absorbed request.
func (h *handoffs) take(e *handoff) (rerun bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rerun = e.rerun
	e.rerun = false
	select {
	case <-e.wake: // told already
	default:
	}
	return rerun
}

// tryClose ends absorbing for e unless a request was absorbed since take:
// then it reports false, and the goroutine calls Advance again.
func (h *handoffs) tryClose(e *handoff) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.rerun {
		return false
	}
	h.closeLocked(e)
	return true
}

// close ends absorbing for e.
func (h *handoffs) close(e *handoff) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked(e)
}

func (h *handoffs) closeLocked(e *handoff) {
	e.closed = true
	if h.open[e.key] == e {
		delete(h.open, e.key)
	}
}

// done frees e's slot.
func (h *handoffs) done(*handoff) {
	h.mu.Lock()
	h.free++
	h.mu.Unlock()
	h.wg.Done()
}

// beginStop refuses new hand-offs and tells Busy waits to hand their
// threads to River.
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

// launch hands the thread off after EnqueueWith's commit, on a slot
// acquire took, with the runs whose pre-claims the commit wrote: to the
// thread's hand-off still absorbing, which calls Advance again (the slot
// is given back), or to a new goroutine.
func (q *Queue) launch(tenant, thread string, claims []txhook.RunKey) {
	h := &q.hand
	k := threadKey{tenant, thread}
	h.mu.Lock()
	if h.drop {
		h.mu.Unlock()
		h.unused()
		return
	}
	if e := h.open[k]; e != nil {
		e.rerun = true
		e.claims = append(e.claims, claims...)
		e.signal()
		h.mu.Unlock()
		h.unused()
		return
	}
	e := &handoff{key: k, started: time.Now(), wake: make(chan struct{}, 1), claims: claims}
	h.open[k] = e
	h.mu.Unlock()
	go q.runHandoff(e)
}

// runHandoff works a handed-off thread: Advance, then the outcome as
// worker.work treats it, with nothing to complete.
func (q *Queue) runHandoff(e *handoff) {
	hoptrace.Mark("handoff")
	defer q.hand.done(e)
	defer q.keepPreClaimed(e)()
	log := q.cfg.Logger.With(slog.String("tenant", e.key.tenant), slog.String("thread_id", e.key.thread))
	w := &worker{q: q}
	for {
		res, err := q.advanceHandoff(w, e)
		rerun := q.hand.take(e)
		if q.hand.ctx.Err() != nil {
			// Cut by a hard stop: the runs are left to their leases and
			// pre-claims (the sweeper) or to the next start's re-enqueue.
			q.hand.close(e)
			return
		}
		if err != nil {
			log.ErrorContext(q.hand.ctx, "queue: advancing the thread failed; the hand-off ends and is not retried", slog.String("error", err.Error()))
			res = Result{Outcome: Done}
		}
		switch res.Outcome {
		case Busy:
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
			err := q.enqueue(ectx, replace, e.key.tenant, e.key.thread)
			cancel()
			if err == nil {
				q.releasePreClaims(e, log)
				// The new job starts after this call, after every request
				// absorbed before it; one absorbed since may have been
				// stored after the job started, so it is enqueued too
				// (coalesce: the new job stands for it while it waits).
				// Advancing it here instead would run beside the job, and
				// two Advance calls of one thread may both execute its
				// next run until one claims it.
				if !q.hand.tryClose(e) {
					q.hand.close(e)
					ectx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
					if err := q.enqueue(ectx, coalesce, e.key.tenant, e.key.thread); err != nil {
						log.ErrorContext(ectx, "queue: enqueueing a request absorbed during the hand-off failed; its run's pre-claim insures it", slog.String("error", err.Error()))
					} else {
						q.releasePreClaims(e, log)
					}
					cancel()
				}
				return
			}
			log.ErrorContext(q.hand.ctx, "queue: enqueueing the thread's pending work failed; the hand-off does it", slog.String("error", err.Error()))
			if !q.busyWait(e, q.cfg.BusySnooze) {
				q.handBack(e, log)
				return
			}
		default: // Done, or an unknown outcome
			if res.Outcome != Done {
				log.ErrorContext(q.hand.ctx, "queue: Advance returned an unknown outcome; the hand-off ends", slog.String("outcome", res.Outcome.String()))
			}
			if rerun || !q.hand.tryClose(e) {
				continue // a request was absorbed: Advance again
			}
			return
		}
	}
}

// keepPreClaimed renews, every third of the window while the hand-off
// lasts, the pre-claims of the runs it stands for, so that no sweeper
// enqueues a run this process is still about to claim; a run found
// claimed is renewed no more. A hand-off shorter than a third of the
// window writes nothing for it. The returned function stops it, waiting
// for a write in progress.
func (q *Queue) keepPreClaimed(e *handoff) (stop func()) {
	if q.cfg.PreClaims == nil {
		return func() {}
	}
	every := q.cfg.HandoffWindow / 3
	return repeat.Every(every, func() bool {
		q.hand.mu.Lock()
		claims := append([]txhook.RunKey(nil), e.claims...)
		q.hand.mu.Unlock()
		var gone []txhook.RunKey
		for _, c := range claims {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			ours, err := q.cfg.PreClaims.RenewPreClaim(ctx, c.Tenant, c.RunID, q.cfg.Owner, q.preClaimUntil())
			cancel()
			switch {
			case err != nil:
				q.cfg.Logger.Warn("queue: renewing a handed-off run's pre-claim failed; the sweeper may enqueue its thread once it expires",
					slog.String("tenant", c.Tenant), slog.String("run_id", c.RunID), slog.String("error", err.Error()))
			case !ours:
				gone = append(gone, c)
			}
		}
		if len(gone) > 0 {
			q.hand.mu.Lock()
			e.claims = without(e.claims, gone)
			q.hand.mu.Unlock()
		}
		return true
	})
}

// without is claims less those in gone.
func without(claims, gone []txhook.RunKey) []txhook.RunKey {
	out := claims[:0]
	for _, c := range claims {
		drop := false
		for _, g := range gone {
			drop = drop || c == g
		}
		if !drop {
			out = append(out, c)
		}
	}
	return out
}

// advanceHandoff calls Advance once for e, telling it which runs this
// process holds pre-claims for (txhook.WithHeld): those it may execute
// before claiming them.
func (q *Queue) advanceHandoff(w *worker, e *handoff) (Result, error) {
	wctx, cancel := bounded(q.hand.ctx, q.cfg.JobTimeout)
	defer cancel()
	return w.advance(txhook.WithHeld(wctx, func(tenant, runID string) bool { return q.hand.holds(e, tenant, runID) }), e.key.tenant, e.key.thread)
}

// holds reports whether e stands for the pre-claim of tenant's run runID.
func (h *handoffs) holds(e *handoff, tenant, runID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range e.claims {
		if c.RunID == runID && c.Tenant == tenant {
			return true
		}
	}
	return false
}

// preClaimUntil is the expiry of a pre-claim written now: the window from
// now.
func (q *Queue) preClaimUntil() time.Time {
	return time.Now().Add(q.cfg.HandoffWindow)
}

// busyWait waits d, or less when a request is absorbed; false when the
// thread must go to River instead (the queue is stopping, or half the
// window has passed).
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

// handBack gives the thread to River: the hand-off stops absorbing, then
// a job of the thread is enqueued, which starts after every request the
// hand-off absorbed (and snoozes, if the thread is still busy). The runs'
// pre-claims are left to expire: the job's claim replaces them, and a
// sweeper finding one expired only enqueues the thread again.
func (q *Queue) handBack(e *handoff, log *slog.Logger) {
	q.hand.close(e)
	ctx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
	defer cancel()
	if err := q.enqueue(ctx, coalesce, e.key.tenant, e.key.thread); err != nil {
		log.WarnContext(ctx, "queue: handing the thread to River failed; the sweeper enqueues it when its pre-claims expire", slog.String("error", err.Error()))
		return
	}
	q.releasePreClaims(e, log)
}

// releasePreClaims deletes the pre-claims e still stands for, once a River
// job of its thread is enqueued (which insures the runs from then on), so
// that the job's claim is not refused on another replica until they
// expire. A release that fails leaves the pre-claim to expire: the job
// waits for it, snoozing.
func (q *Queue) releasePreClaims(e *handoff, log *slog.Logger) {
	if q.cfg.PreClaims == nil {
		return
	}
	q.hand.mu.Lock()
	claims := e.claims
	e.claims = nil
	q.hand.mu.Unlock()
	for _, c := range claims {
		ctx, cancel := context.WithTimeout(context.Background(), reenqueueTimeout)
		if _, err := q.cfg.PreClaims.ReleasePreClaim(ctx, c.Tenant, c.RunID, q.cfg.Owner); err != nil {
			log.WarnContext(ctx, "queue: releasing a run's pre-claim failed; a River job elsewhere waits for it to expire", slog.String("run_id", c.RunID), slog.String("error", err.Error()))
		}
		cancel()
	}
}
