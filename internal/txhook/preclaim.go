package txhook

import (
	"context"
	"sync"
	"time"
)

// PreClaim asks the transaction that stores a new run (a run's accept) to
// also write the run's pre-claim: a lease of the run, owned by Owner,
// that expires at Until, with token 0 (no claim ever holds token 0, so
// nothing can be fenced with it). It is the insurance of a run the queue
// hands off to its own process (server/queue's hand-off): the run's claim
// replaces it (the stores write it on the run's row, with the run, and
// the claim's UPDATE of that row sets its own lease), and if the
// process dies before the claim, the service's lease sweeper finds it
// expired and enqueues the run's thread through the queue.
//
// The queue makes one per transaction (WithPreClaim); the store records in
// it each run it wrote a pre-claim for (Wrote), and the queue reads them
// back after the commit (Runs). A store that writes none leaves Runs
// empty, and the queue then inserts a job of its own instead.
type PreClaim struct {
	// Owner is the owner the pre-claim's lease names.
	Owner string
	// Until is the pre-claim's expiry.
	Until time.Time

	mu   sync.Mutex
	runs []RunKey
}

// RunKey names one run of a tenant.
type RunKey struct {
	Tenant, RunID string
}

type preClaimKey struct{}

// WithPreClaim returns ctx asking the transaction a call makes with it to
// write pre-claims as p says.
func WithPreClaim(ctx context.Context, p *PreClaim) context.Context {
	return context.WithValue(ctx, preClaimKey{}, p)
}

// PreClaimOf is the PreClaim ctx carries; nil when it asks for none.
func PreClaimOf(ctx context.Context) *PreClaim {
	p, _ := ctx.Value(preClaimKey{}).(*PreClaim)
	return p
}

// Wrote records that the transaction wrote the pre-claim of tenant's run
// runID.
func (p *PreClaim) Wrote(tenant, runID string) {
	p.mu.Lock()
	p.runs = append(p.runs, RunKey{tenant, runID})
	p.mu.Unlock()
}

// Runs are the runs whose pre-claims the transaction wrote, in order.
func (p *PreClaim) Runs() []RunKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RunKey(nil), p.runs...)
}

// Held reports whether this process holds the pre-claim of tenant's run
// runID: it wrote it with the run (PreClaim) and keeps renewing it. The
// queue's hand-off passes one to the Advance it calls (WithHeld).
type Held func(tenant, runID string) bool

type heldKey struct{}

// WithHeld returns ctx telling the Advance called with it which runs this
// process holds pre-claims for. Such a run may be executed before it is
// claimed (its claim then commits with its first step's write): no other
// process executes a run whose live pre-claim is not its own, so no
// other execution of it can start meanwhile. Any other run is claimed
// before it executes.
func WithHeld(ctx context.Context, h Held) context.Context {
	return context.WithValue(ctx, heldKey{}, h)
}

// HeldBy reports whether ctx (WithHeld) says this process holds the
// pre-claim of tenant's run runID; false when ctx says nothing.
func HeldBy(ctx context.Context, tenant, runID string) bool {
	h, _ := ctx.Value(heldKey{}).(Held)
	return h != nil && h(tenant, runID)
}
