package mcpapi

import (
	"context"
	"errors"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// cancelledByClient reports whether a call's context ended because the
// client sent notifications/cancelled for it: the SDK cancels the call
// with no cause of its own then (context.Canceled itself), while a lost
// connection or a closed session cancels it with the transport's error.
func cancelledByClient(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == context.Canceled // the bare sentinel, not errors.Is: wrapped causes are losses
}

// stopRun cancels a call's run (action interrupt: what it did so far is
// kept, and the thread waits for nothing): a pending run ends at once, a
// running one is asked to stop here and, through the database and the
// broker, on the worker that runs it.
func (h *Handler) stopRun(ctx context.Context, tenant string, run db.Run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cur, err := h.DB.GetRun(ctx, tenant, run.ThreadID, run.ID)
	if err != nil || cur.Status.Terminal() {
		return
	}
	if err := h.Runs.Stop(ctx, tenant, cur, runs.Interrupt); err != nil && !errors.Is(err, db.ErrConflict) && !errors.Is(err, db.ErrNotFound) {
		h.log().Warn("mcp: cancelling a run failed", "run", run.ID, "err", err)
	}
}
