package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/server/runs"
)

// sweeper takes over runs whose lease expired (their worker died or hung):
// every SweepInterval it lists expired leases, takes each over with a new
// token (the old worker's writes are then refused), executes the run from
// its thread's latest checkpoint, and enqueues the thread for the runs
// waiting behind it. An expired pre-claim (token 0: the insurance of a run
// a process handed to itself and never claimed) is not taken over: its
// thread is enqueued and the pre-claim dropped (dropPreClaim). A second loop
// (ttl.go) expires threads whose TTL ran out.
type sweeper struct {
	s       *Server
	enqueue runs.Enqueuer
	cancel  context.CancelFunc
	loop    sync.WaitGroup // the ticker loop
	runs    sync.WaitGroup // runs taken over, executing
	runCtx  context.Context
	stopRun context.CancelFunc
}

func newSweeper(s *Server, enqueue runs.Enqueuer) *sweeper {
	return &sweeper{s: s, enqueue: enqueue}
}

// start sweeps at once (runs of a previous process whose lease already
// expired), then every SweepInterval until stop.
func (w *sweeper) start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.runCtx, w.stopRun = context.WithCancel(context.WithoutCancel(ctx))
	w.loop.Add(2)
	go w.threadLoop(ctx)
	go func() {
		defer w.loop.Done()
		t := time.NewTicker(w.s.cfg.SweepInterval)
		defer t.Stop()
		for {
			if n, err := w.sweep(ctx); err != nil && ctx.Err() == nil {
				w.s.log.Warn("lease sweep failed; retrying at the next tick", "err", err)
			} else if n > 0 {
				w.s.log.Info("took over runs whose lease expired", "runs", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the sweeps, waits for taken-over runs until ctx ends, then
// cancels them and waits for them to return.
func (w *sweeper) stop(ctx context.Context) error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	w.loop.Wait()
	done := make(chan struct{})
	go func() { w.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		w.stopRun()
		<-done
	}
	w.stopRun()
	return nil
}

// sweep takes over the expired leases it finds, pre-claims aside, and
// reports how many.
func (w *sweeper) sweep(ctx context.Context) (int, error) {
	expired, err := w.s.st.db.ExpiredLeases(ctx, time.Now(), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range expired {
		if l.Token == 0 {
			// A pre-claim (db.PreClaimer): the run was never claimed.
			if err := w.dropPreClaim(ctx, l); err != nil {
				return n, err
			}
			continue
		}
		lease, err := w.s.st.db.TakeOver(ctx, l, w.s.owner, w.s.leaseTTL())
		if errors.Is(err, db.ErrLeaseLost) {
			continue // renewed or taken by another worker meanwhile
		}
		if err != nil {
			return n, fmt.Errorf("take over run %s: %w", l.RunID, err)
		}
		run, err := w.s.st.db.GetRun(ctx, lease.Tenant, lease.ThreadID, lease.RunID)
		if err != nil {
			return n, fmt.Errorf("read run %s taken over: %w", l.RunID, err)
		}
		n++
		w.s.log.Info("resuming a run whose worker stopped renewing its lease", "run", run.ID, "thread", run.ThreadID, "previous_owner", l.Owner)
		w.runs.Add(1)
		go func() {
			defer w.runs.Done()
			if err := w.s.svc.Execute(w.s.tel.MarkTakeover(w.runCtx), lease, run); err != nil {
				w.s.log.Error("a run taken over failed to execute", "run", run.ID, "err", err)
			}
			if err := w.enqueue(context.WithoutCancel(w.runCtx), lease.Tenant, lease.ThreadID); err != nil {
				w.s.log.Error("could not enqueue the thread after a run taken over", "thread", lease.ThreadID, "err", err)
			}
		}()
	}
	return n, nil
}

// dropPreClaim handles an expired pre-claim: the lease of token 0 written
// with a run the queue handed off to its own process (server/queue's
// hand-off), which the run's claim would have replaced. Its process died,
// or lost its database, before the claim, so the run is not executed here
// (it never started): the pre-claim is dropped, if still as read, and the
// thread enqueued through the queue, which runs the run as any other. A
// run that ended meanwhile (cancelled while pending) only loses the lease.
func (w *sweeper) dropPreClaim(ctx context.Context, l db.Lease) error {
	pc, ok := w.s.st.db.(db.PreClaimer)
	if !ok {
		return nil // this DB writes no pre-claims
	}
	run, err := w.s.st.db.GetRun(ctx, l.Tenant, l.ThreadID, l.RunID)
	if errors.Is(err, db.ErrNotFound) {
		return nil // deleted, its lease with it
	}
	if err != nil {
		return fmt.Errorf("read run %s of an expired pre-claim: %w", l.RunID, err)
	}
	if run.Status == db.RunRunning {
		return nil // claimed since it was listed: its own lease stands
	}
	if run.Status == db.RunPending {
		// The job first: a failure leaves the pre-claim for the next sweep.
		w.s.log.Info("enqueueing a run whose process handed it to itself and stopped before claiming it", "run", run.ID, "thread", run.ThreadID, "previous_owner", l.Owner)
		if err := w.enqueue(ctx, l.Tenant, l.ThreadID); err != nil {
			return fmt.Errorf("enqueue thread %s of an expired pre-claim: %w", l.ThreadID, err)
		}
	}
	if err := pc.DropLease(ctx, l); err != nil && !errors.Is(err, db.ErrLeaseLost) {
		return fmt.Errorf("drop the expired pre-claim of run %s: %w", l.RunID, err)
	}
	return nil
}

func (s *Server) leaseTTL() time.Duration {
	if s.cfg.LeaseTTL > 0 {
		return s.cfg.LeaseTTL
	}
	return 15 * time.Second // the run service's default
}

// requeuePending enqueues every thread, of any tenant, that has a pending
// run, so a run whose job was lost (the process died between storing the
// run and enqueueing it) still runs; a thread whose pending runs may not
// start yet (after_seconds) gets a job for the earliest start. Queued
// jobs survive restarts on their own; this is the backstop.
func (s *Server) requeuePending(ctx context.Context, q *queue.Queue) error {
	const page = 500
	n, tenant, thread := 0, "", ""
	for {
		pending, err := s.st.db.PendingThreads(ctx, tenant, thread, page)
		if err != nil {
			return fmt.Errorf("server: list threads to re-enqueue: %w", err)
		}
		for _, p := range pending {
			if p.NotBefore.IsZero() || !p.NotBefore.After(time.Now()) {
				err = q.Enqueue(ctx, p.Tenant, p.ThreadID)
			} else {
				err = q.EnqueueAt(ctx, p.Tenant, p.ThreadID, p.NotBefore)
			}
			if err != nil {
				return fmt.Errorf("server: re-enqueue thread %s of tenant %s: %w", p.ThreadID, p.Tenant, err)
			}
			n++
			tenant, thread = p.Tenant, p.ThreadID
		}
		if len(pending) < page {
			break
		}
	}
	if n > 0 {
		s.log.Info("re-enqueued threads with pending runs", "threads", n)
	}
	return nil
}

// scheduleDelayed enqueues a job for the start of the thread's earliest
// pending run that may not start yet (after_seconds): the run service
// stores such a run and enqueues the thread at once, and the job finds
// nothing to run.
func (s *Server) scheduleDelayed(ctx context.Context, q *queue.Queue, tenant, thread string) error {
	pending, err := s.st.db.ListRuns(ctx, tenant, thread, db.RunQuery{Status: db.RunPending, Limit: 100})
	if errors.Is(err, db.ErrNotFound) {
		return nil // the thread was deleted since its job was queued: nothing is left to start
	}
	if err != nil {
		return fmt.Errorf("list the pending runs of thread %s: %w", thread, err)
	}
	var first time.Time
	for _, r := range pending {
		if r.NotBefore.After(time.Now()) && (first.IsZero() || r.NotBefore.Before(first)) {
			first = r.NotBefore
		}
	}
	if first.IsZero() {
		return nil
	}
	return q.EnqueueAt(ctx, tenant, thread, first)
}
