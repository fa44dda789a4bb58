package deep

import (
	"context"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
)

// Repair returns the middleware that repairs the history of every model
// request before the rest of the chain sees it, with llm.RepairHistory:
// a tool call left without a result (its approval was abandoned when the
// person wrote again, its run was cancelled) gets a tool error saying it
// did not run (llm.MissingResult), results are put right after their
// calls, malformed calls are fixed. The model call itself repairs the
// same way (llm.Call); doing it first means summarisation never folds a
// call without its result.
func Repair() middleware.Middleware {
	return middleware.ModelFunc("repair_tool_calls", func(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		req := *call.Request
		req.Messages = llm.RepairHistory(req.Messages) // itself when nothing needs repair
		call.Request = &req
		return next(ctx, call)
	})
}
