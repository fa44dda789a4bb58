package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// pass is a middleware that only calls next: the chain's own cost.
type pass struct{ name string }

func (p pass) Name() string { return p.name }
func (p pass) WrapModel(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	return next(ctx, c)
}
func (p pass) WrapTool(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	return next(ctx, c)
}

func passChain(b *testing.B, n int) *middleware.Chain {
	mws := make([]middleware.Middleware, n)
	for i := range mws {
		mws[i] = pass{fmt.Sprintf("m%d", i)}
	}
	return mustChain(b, mws...)
}

// BenchmarkChainModelCall measures the chain's overhead per model call
// with 0, 3 and 10 pass-through middleware, around an inner handler that
// returns a fixed reply (no model work).
func BenchmarkChainModelCall(b *testing.B) {
	resp := &llm.Response{Message: llm.Assistant("ok")}
	inner := func(context.Context, *middleware.ModelCall) (*llm.Response, error) { return resp, nil }
	for _, n := range []int{0, 3, 10} {
		b.Run(fmt.Sprintf("middleware=%d", n), func(b *testing.B) {
			h := passChain(b, n).WrapModel(inner)
			call := &middleware.ModelCall{Request: &llm.Request{}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChainToolCall is BenchmarkChainModelCall for tool calls.
func BenchmarkChainToolCall(b *testing.B) {
	res := &middleware.ToolResult{Message: llm.ToolResult(llm.ToolCall{ID: "c"}, "ok")}
	inner := func(context.Context, *middleware.ToolCall) (*middleware.ToolResult, error) { return res, nil }
	for _, n := range []int{0, 3, 10} {
		b.Run(fmt.Sprintf("middleware=%d", n), func(b *testing.B) {
			h := passChain(b, n).WrapTool(inner)
			call := &middleware.ToolCall{Call: llm.ToolCall{ID: "c", Name: "t"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApprovalToolCall measures what the approval middleware adds to
// a tool call that needs no person, with a tool node as the catalog: a
// read tool (its kind decides; nothing is checked) and a write tool that
// a predicate approves (its arguments are checked against the schema,
// then the predicate runs).
func BenchmarkApprovalToolCall(b *testing.B) {
	type args struct {
		To   string `json:"to"`
		Body string `json:"body"`
	}
	fn := func(context.Context, args) (string, error) { return "ok", nil }
	node, err := tool.NewNode(tool.NodeConfig{
		Messages: llm.NewMessagesKey("messages"),
		Tools:    []tool.Tool{tool.MustFunc("read", "Reads.", fn, tool.ReadOnly()), tool.MustFunc("send", "Sends.", fn)},
	})
	if err != nil {
		b.Fatal(err)
	}
	policy := tool.Policy{"send": tool.ApproveIf(func(json.RawMessage) bool { return true })}
	res := &middleware.ToolResult{Message: llm.ToolResult(llm.ToolCall{ID: "c"}, "ok")}
	inner := func(context.Context, *middleware.ToolCall) (*middleware.ToolResult, error) { return res, nil }
	h := mustChain(b, middleware.Approval(policy)).WrapTool(inner)
	for _, name := range []string{"read", "send"} {
		b.Run(name, func(b *testing.B) {
			call := &middleware.ToolCall{Call: llm.ToolCall{ID: "c", Name: name, Arguments: `{"to":"a@x.io","body":"hello"}`}, Tools: node}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
