package db

import (
	"context"
	"errors"
	"time"
)

// ErrTenantBusy means the tenant already has as many running runs as
// RunLimiter.ClaimRunWithin allows; the run stays pending.
var ErrTenantBusy = errors.New("db: the tenant runs as many runs as its limit allows")

// RunLimiter is an optional interface of a DB that caps a tenant's running
// runs across every process sharing the database. Both backends implement
// it.
type RunLimiter interface {
	// ClaimRunWithin is ClaimRun that also fails with ErrTenantBusy when
	// the tenant already has max runs running (max <= 0: no cap). The
	// running runs are counted in the database in the claim's own
	// transaction, and claims of one tenant are serialized there, so two
	// replicas claiming at once cannot both take the last slot.
	ClaimRunWithin(ctx context.Context, tenant, runID, owner string, ttl time.Duration, max int) (Run, Lease, error)
}
