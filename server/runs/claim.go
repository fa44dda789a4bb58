package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// errUnclaimed wraps the error of a claim made with a run's first write
// that failed: the run was not this worker's to execute (another worker
// claimed it, it was cancelled, or another run of its thread runs), so
// nothing of the attempt was written and the run is not finished.
var errUnclaimed = errors.New("runs: the run could not be claimed")

// deferredClaim is the claim of a run executed before it is claimed: it
// commits with the run's first write (a checkpoint or pending writes,
// through the saver's transaction hook), or on its own when something else
// is written first (events flushed while a task runs, the lease's renewal,
// a run that ends before its first checkpoint).
type deferredClaim struct {
	tx     db.TxClaimer
	db     db.DB
	owner  string
	ttl    time.Duration
	tenant string
	runID  string
}

// deferClaims reports whether Advance executes runs before claiming them:
// the claim then rides in the run's first step's transaction.
func (s *Service) deferClaims() bool {
	_, ok := s.cfg.DB.(db.TxClaimer)
	return ok && s.cfg.JoinStepWrites && s.cfg.MaxRunningPerTenant <= 0
}

// threadRunning reports whether another run of the thread is running. It
// is a read before a deferred claim (which checks again as it commits), so
// that a busy thread costs no execution.
func (s *Service) threadRunning(ctx context.Context, tenant, thread string) (bool, error) {
	rs, err := s.cfg.DB.ListRuns(ctx, tenant, thread, db.RunQuery{Status: db.RunRunning, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(rs) > 0, nil
}

// claimNowLocked makes a deferred claim in a transaction of its own. e.mu is
// held. A claim that fails is kept in e.unclaimed and fails every later
// write.
func (e *eventLog) claimNowLocked(ctx context.Context) error {
	c := e.pending
	if c == nil {
		return nil
	}
	_, l, err := c.db.ClaimRun(ctx, c.tenant, c.runID, c.owner, c.ttl)
	if err != nil {
		return e.claimFailedLocked(err)
	}
	e.l, e.pending = l, nil
	return nil
}

// claimFailedLocked records a failed deferred claim and returns the
// error the run's writes fail with. e.mu is held.
func (e *eventLog) claimFailedLocked(err error) error {
	if e.unclaimed == nil {
		e.unclaimed = fmt.Errorf("%w: %w", errUnclaimed, err)
	}
	e.pending = nil
	return e.unclaimed
}

// claimed makes the deferred claim now if it is still pending, and
// reports a claim that failed.
func (e *eventLog) claimed(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unclaimed != nil {
		return e.unclaimed
	}
	return e.claimNowLocked(ctx)
}
