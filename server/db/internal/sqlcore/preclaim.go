package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// preClaim is the pre-claim ctx asks for (txhook.PreClaim) of the new
// pending run r: nil when it asks for none, or when r may not start yet
// (NotBefore ahead), as no hand-off would claim it, so its job goes
// through the queue. The run's INSERT writes it on the run's row (lease
// token 0, owner and expiry), and the claim's UPDATE replaces it: no
// statement of its own. The caller records it (txhook.PreClaim.Wrote)
// once the run is stored.
func preClaim(ctx context.Context, r db.Run) *txhook.PreClaim {
	p := txhook.PreClaimOf(ctx)
	if p == nil || p.Owner == "" || r.NotBefore.After(dbutil.Now()) {
		return nil
	}
	return p
}

// preClaimArgs are InsertRun's pre-claim owner and expiry for p (NULL
// and NULL for none).
func (s *Store) preClaimArgs(p *txhook.PreClaim) (owner, until any) {
	if p == nil {
		return nil, nil
	}
	return p.Owner, s.d.Time(p.Until.Truncate(time.Microsecond))
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

// DropLease ends an expired lease as ExpiredLeases read it (the run's
// row then holds none); see db.PreClaimer.
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
