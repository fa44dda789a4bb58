package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// errTimeUp wraps a model call's error when the turn's deadline, not the
// caller, ended it.
var errTimeUp = errors.New("router: the turn's deadline passed")

// deadlineKey carries the turn's deadline from the router node, which
// may have just set it, to the deadline middleware.
type deadlineKey struct{}

// withDeadline gives the router node's model call the turn's deadline.
func withDeadline(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, deadlineKey{}, at)
}

// deadline is Config.Deadline as the outermost middleware of the router's
// chain: every model and tool call runs under the turn's deadline (the
// clock in turnKey; the router node's own call gets it from the context,
// as it may set the clock in the same step). A tool call that starts
// after the deadline, or is still running at it, is answered as stopped,
// with the verdict that ends the turn; a model call it ends fails with
// errTimeUp, and the router node ends the turn. Whether another round may
// start at all is the router node's decision, on the same clock.
type deadline struct{ r *router }

func (deadline) Name() string { return "deadline" }

func (d deadline) at(ctx context.Context, s graph.State) time.Time {
	if at, ok := ctx.Value(deadlineKey{}).(time.Time); ok && !at.IsZero() {
		return at
	}
	at, _ := d.r.clock(ctx, turnKey.Get(s))
	return at
}

func (d deadline) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	mctx, cancel := context.WithDeadline(ctx, d.at(ctx, call.State))
	defer cancel()
	resp, err := next(mctx, call)
	if err != nil && mctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", errTimeUp, err)
	}
	return resp, err
}

func (d deadline) WrapTool(ctx context.Context, call *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	at := d.at(ctx, call.State)
	if !time.Now().Before(at) {
		return stopped(call.Call, "the deadline passed before it started"), nil
	}
	cctx, cancel := context.WithDeadline(ctx, at)
	defer cancel()
	res, err := next(cctx, call)
	if err != nil && cctx.Err() != nil && ctx.Err() == nil && !errors.Is(err, graph.ErrInterrupted) {
		return stopped(call.Call, "the deadline passed while it ran"), nil
	}
	return res, err
}

// stopped answers a call the deadline stopped, and marks the turn as
// timed out.
func stopped(call llm.ToolCall, why string) *middleware.ToolResult {
	res := middleware.Refuse(call, "Error: this call was stopped: "+why+". Do not assume it finished.", "stopped: "+why)
	res.Writes = append(res.Writes, verdictsKey.Set(map[string]verdict{call.ID: {Reason: ReasonDeadline}}))
	return res
}
