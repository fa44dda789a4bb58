package runs

import (
	"context"
	"errors"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// AdvanceResult says what the queue should do with a thread after Advance.
type AdvanceResult int

// Advance results.
const (
	Idle    AdvanceResult = iota // nothing pending: the job is done
	Busy                         // another run holds the thread: snooze and try again
	More                         // a run finished and others are pending: enqueue again
	AtLimit                      // the tenant runs MaxRunningPerTenant runs: snooze until a slot frees
)

// Advance runs the thread's oldest pending run, if any. A job of the queue
// calls it; a run that fails or is interrupted is a normal outcome (the
// run's status says it), and only infrastructure errors are returned.
func (s *Service) Advance(ctx context.Context, tenant, thread string) (AdvanceResult, error) {
	res, _, err := s.AdvanceUntil(ctx, tenant, thread)
	return res, err
}

// Next is when a thread left Idle by AdvanceUntil has its next run.
type Next struct {
	// Known says whether At was read: false, the caller reads it.
	Known bool
	// At is when the thread's earliest delayed run may start (zero:
	// none).
	At time.Time
}

// AdvanceUntil is Advance that, when it runs a run and finds nothing else
// due, also says when the thread's earliest delayed run may start, from
// the same read (db.PendingPeeker), so that the caller can queue a job for
// it without reading the thread's runs again.
func (s *Service) AdvanceUntil(ctx context.Context, tenant, thread string) (AdvanceResult, Next, error) {
	var (
		run  db.Run
		busy *bool
		pre  *db.Assistant
		err  error
	)
	if f, ok := s.takeFresh(ctx, tenant, thread); ok {
		// Accepted by this process with nothing else live on its thread
		// (fresh.go): no read of the thread's pending runs.
		idle := false
		run, busy, pre = f.run, &idle, f.pre
	} else {
		run, busy, pre, err = s.nextPending(ctx, tenant, thread)
	}
	switch {
	case errors.Is(err, db.ErrNotFound):
		return Idle, Next{}, nil
	case err != nil:
		return Idle, Next{}, err
	}
	if busy != nil && *busy {
		return Busy, Next{}, nil
	}
	// One execution of a run at a time in this process: another Advance of
	// its thread (a hand-off and a River job, two River jobs) waits.
	if !s.reserve(run.ID) {
		return Busy, Next{}, nil
	}
	defer s.unreserve(run.ID)
	if s.deferClaims() && txhook.HeldBy(ctx, tenant, run.ID) {
		// Executed first and claimed with its first write (deferredClaim):
		// only a run whose pre-claim this process holds, which no other
		// process executes while it lives. Any other run is claimed first
		// (below), or two processes could both execute its first step,
		// side effects included, until one of them claimed it.
		if busy == nil {
			b, err := s.threadRunning(ctx, tenant, thread)
			if err != nil {
				return Idle, Next{}, err
			}
			if b {
				return Busy, Next{}, nil
			}
		}
		var after db.Pending
		err := s.execute0(ctx, db.Lease{Tenant: tenant, RunID: run.ID, ThreadID: run.ThreadID, Owner: s.cfg.Owner}, run, true, pre, &after)
		switch {
		case errors.Is(err, errUnclaimed) && errors.Is(err, db.ErrBusy):
			return Busy, Next{}, nil
		case errors.Is(err, errUnclaimed):
			return More, Next{}, nil // taken or ended meanwhile: look again
		case err != nil:
			return Idle, Next{}, err
		}
		return s.afterRun(ctx, tenant, thread, after)
	}
	var claimed db.Run
	var lease db.Lease
	if s.cfg.MaxRunningPerTenant > 0 {
		claimed, lease, err = s.cfg.DB.(db.RunLimiter).ClaimRunWithin(ctx, tenant, run.ID, s.cfg.Owner, s.cfg.LeaseTTL, s.cfg.MaxRunningPerTenant)
	} else {
		claimed, lease, err = s.cfg.DB.ClaimRun(ctx, tenant, run.ID, s.cfg.Owner, s.cfg.LeaseTTL)
	}
	switch {
	case errors.Is(err, db.ErrTenantBusy):
		return AtLimit, Next{}, nil
	case errors.Is(err, db.ErrBusy):
		return Busy, Next{}, nil
	case errors.Is(err, db.ErrConflict):
		return More, Next{}, nil // taken by another worker meanwhile: look again
	case err != nil:
		return Idle, Next{}, err
	}
	var after db.Pending
	if err := s.execute0(ctx, lease, claimed, false, pre, &after); err != nil {
		return Idle, Next{}, err
	}
	return s.afterRun(ctx, tenant, thread, after)
}

// reserve marks run as being executed by an Advance of this process; false
// when one already is.
func (s *Service) reserve(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.advancing[runID]; ok {
		return false
	}
	s.advancing[runID] = struct{}{}
	return true
}

// unreserve ends reserve.
func (s *Service) unreserve(runID string) {
	s.mu.Lock()
	delete(s.advancing, runID)
	s.mu.Unlock()
}

// nextPending reads the thread's next due run. When the DB reads it with
// more (db.PendingReader), busy says whether another run of the thread is
// running and pre is the run's assistant as it is now (nil when the run
// names a version); otherwise both are nil and the caller reads them.
func (s *Service) nextPending(ctx context.Context, tenant, thread string) (run db.Run, busy *bool, pre *db.Assistant, err error) {
	pr, ok := s.cfg.DB.(db.PendingReader)
	if !ok {
		run, err = s.cfg.DB.NextPending(ctx, tenant, thread, time.Now())
		return run, nil, nil, err
	}
	run, running, a, aok, err := pr.NextPendingRun(ctx, tenant, thread, time.Now())
	if err != nil {
		return db.Run{}, nil, nil, err
	}
	if aok {
		pre = &a
	}
	return run, &running, pre, nil
}

// afterRun says what the thread has left once a run of it is done: More
// when a pending run is due, else Idle, with when its earliest delayed
// run may start when the DB tells that in the same read. after is what
// the run's finish read, if it did (then nothing is read here).
func (s *Service) afterRun(ctx context.Context, tenant, thread string, after db.Pending) (AdvanceResult, Next, error) {
	if after.Known {
		if after.Due {
			return More, Next{}, nil
		}
		return Idle, Next{Known: true, At: after.Next}, nil
	}
	if p, ok := s.cfg.DB.(db.PendingPeeker); ok {
		due, at, err := p.PendingAfter(ctx, tenant, thread, time.Now())
		switch {
		case err != nil:
			return Idle, Next{}, nil // as below: the caller looks again
		case due:
			return More, Next{}, nil
		}
		return Idle, Next{Known: true, At: at}, nil
	}
	if _, err := s.cfg.DB.NextPending(ctx, tenant, thread, time.Now()); err == nil {
		return More, Next{}, nil
	}
	return Idle, Next{}, nil
}
