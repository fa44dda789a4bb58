package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// writePreClaim writes, in c, the pre-claim ctx asks for (txhook.PreClaim)
// of run, just stored pending: a lease of token 0 the run's claim
// replaces (UpsertLease is the claim's statement too). A run that may not
// start yet (NotBefore ahead) gets none: no hand-off would claim it, so
// its job goes through the queue. On PostgreSQL the insert is deferred to
// the transaction's next round trip (its commit).
func (s *Store) writePreClaim(ctx context.Context, c Conn, tenant string, run db.Run) error {
	p := txhook.PreClaimOf(ctx)
	if p == nil || p.Owner == "" || run.Status != db.RunPending || run.NotBefore.After(dbutil.Now()) {
		return nil
	}
	until := p.Until.Truncate(time.Microsecond)
	if err := execLater(ctx, c, s.q.UpsertLease, tenant, run.ID, run.ThreadID, p.Owner, int64(0), s.d.Time(until)); err != nil {
		return s.wrap(err, "write the pre-claim of run %q", run.ID)
	}
	p.Wrote(tenant, run.ID)
	return nil
}

// RenewPreClaim sets the expiry of the run's pre-claim to until while owner
// holds it with token 0; see db.PreClaimer.
func (s *Store) RenewPreClaim(ctx context.Context, tenant, runID, owner string, until time.Time) (bool, error) {
	var n int64
	err := s.d.WriteOne(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q.RenewPreClaim, s.d.Time(until.Truncate(time.Microsecond)), tenant, runID, owner)
		return err
	})
	if err != nil {
		return false, s.wrap(err, "renew the pre-claim of run %q", runID)
	}
	return n == 1, nil
}

// DropLease deletes an expired lease as ExpiredLeases read it; see
// db.PreClaimer.
func (s *Store) DropLease(ctx context.Context, expired db.Lease) error {
	var n int64
	err := s.d.WriteOne(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q.DropLease, expired.Tenant, expired.RunID, expired.Token, s.d.Time(expired.ExpiresAt))
		return err
	})
	if err != nil {
		return s.wrap(err, "drop the lease of run %q", expired.RunID)
	}
	if n == 0 {
		return s.fail(db.ErrLeaseLost, "drop the lease of run %q (tenant %q): it changed since it was read", expired.RunID, expired.Tenant)
	}
	return nil
}

// ReleasePreClaim deletes the run's pre-claim while owner holds it; see
// db.PreClaimer.
func (s *Store) ReleasePreClaim(ctx context.Context, tenant, runID, owner string) (bool, error) {
	var n int64
	err := s.d.WriteOne(ctx, func(c Conn) error {
		var err error
		n, err = c.Exec(ctx, s.q.ReleasePreClaim, tenant, runID, owner)
		return err
	})
	if err != nil {
		return false, s.wrap(err, "release the pre-claim of run %q", runID)
	}
	return n == 1, nil
}
