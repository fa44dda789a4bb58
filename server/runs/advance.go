package runs

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

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
// run may start when the DB tells that in the same read.
func (s *Service) afterRun(ctx context.Context, tenant, thread string) (AdvanceResult, Next, error) {
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
