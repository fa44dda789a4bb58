package runs

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
)

// Hooks let the server observe runs (traces, metrics, log fields) without
// the run service knowing how; server/internal/telemetry implements them.
// Every field may be nil.
type Hooks struct {
	// TraceContext returns what to keep with a new run so that its
	// execution, by whichever worker claims it, can be joined to the
	// request that created it: a W3C traceparent, or "" for nothing. It
	// is stored in the run's kwargs (trace_context).
	TraceContext func(ctx context.Context) string
	// Start is called when a worker begins executing a run (claimed, or
	// taken over), before anything else; the run executes with the
	// returned context, and end is called once when it stops, with its
	// terminal status, or "" when the run was not finished here (this
	// worker is stopping, or lost the lease) and will be taken over.
	Start func(ctx context.Context, r RunInfo) (_ context.Context, end func(status db.RunStatus, err error))
	// Graph returns run options the run's graph executes with (an
	// observer of its steps and calls), once the graph is known.
	Graph func(ctx context.Context, graphID string) []graph.RunOption
	// Finished is called once a run executed here has recorded its
	// terminal status (run is the finished row), before a temporary
	// thread is deleted, so the thread's values can still be read. The
	// server sends webhooks from it.
	Finished func(ctx context.Context, tenant string, run db.Run)
}

// RunInfo describes a run a worker starts executing.
type RunInfo struct {
	Tenant, ThreadID, RunID, AssistantID string
	// TraceContext is what Hooks.TraceContext returned when the run was
	// created.
	TraceContext string
	// CreatedAt is when the run was stored, and NotBefore when it was
	// allowed to start (zero: at once).
	CreatedAt, NotBefore time.Time
}
