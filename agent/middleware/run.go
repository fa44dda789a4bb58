package middleware

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// ToolRunner runs an agent's tool calls through a chain to a tool node and
// records what the chain returned: the one path from a model's tool call
// to the history for every agent. Build it once per agent.
type ToolRunner struct {
	node *tool.Node
	h    ToolHandler
}

// ToolRun is one call as a ToolRunner ran it.
type ToolRun struct {
	// Update appends the tool message and the call's record, with the
	// chain's writes.
	Update graph.Update
	// Result is what the chain returned.
	Result *ToolResult
	// Record is the call's record, as written.
	Record tool.Record
}

// NewToolRunner returns a runner of calls through c's tool wrappers, then
// node.Handle.
func NewToolRunner(c *Chain, node *tool.Node) *ToolRunner {
	inner := func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		msg, rec, err := node.Handle(ctx, call.State, call.Call)
		if err != nil {
			return nil, err
		}
		if ran, ok := ctx.Value(ranKey{}).(*ranCall); ok {
			ran.rec, ran.done = rec, true
		}
		return &ToolResult{Message: msg}, nil
	}
	return &ToolRunner{node: node, h: c.WrapTool(inner)}
}

// ranCall carries the tool node's record of a call out of the chain.
type ranCall struct {
	rec  tool.Record
	done bool
}

type ranKey struct{}

// Run runs call, one of batch (the calls of the reply it belongs to), in
// the step whose state is s. An error stops the run: an interrupt (an
// approval waiting), or cancellation. The record keeps the arguments the
// model wrote, with the approval outcome and a person's edit; a call the
// chain answered without running is recorded with the reason it gave.
func (r *ToolRunner) Run(ctx context.Context, s graph.State, call llm.ToolCall, batch []llm.ToolCall) (ToolRun, error) {
	ran := &ranCall{}
	res, err := r.h(context.WithValue(ctx, ranKey{}, ran), &ToolCall{Call: call, State: s, Batch: batch, Tools: r.node})
	if err != nil {
		return ToolRun{}, err
	}
	if res == nil {
		return ToolRun{}, fmt.Errorf("middleware: the chain answered call %s (%q) with no result; a tool wrapper must return a result or an error", call.ID, call.Name)
	}
	rec := ran.rec
	if !ran.done {
		rec = tool.Record{CallID: call.ID, Tool: call.Name, Approval: tool.OutcomeNotNeeded,
			Step: graph.Step(ctx), Node: graph.NodeName(ctx), TaskID: graph.TaskID(ctx), Error: res.Refused}
		if rec.Error == "" && res.Message.IsError {
			rec.Error = "answered by middleware without running"
		}
	}
	rec.Arguments = call.Arguments
	if res.Approval != "" {
		rec.Approval = res.Approval
	}
	if res.EditedArguments != "" {
		rec.EditedArguments = res.EditedArguments
	}
	u := append(r.node.Record(res.Message, rec), res.Writes...)
	rec.Result = res.Message.Text()
	return ToolRun{Update: u, Result: res, Record: rec}, nil
}
