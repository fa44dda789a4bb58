package router_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// The router's model calls go through Config.Middleware; middleware with
// hooks the router does not run is refused by New.
func TestRouterMiddleware(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("Hello."))
	seen := 0
	tag := middleware.ModelFunc("tag", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		seen++
		resp, err := next(ctx, c)
		if err == nil {
			r := *resp
			r.Message.Parts = []llm.Part{llm.Text(resp.Message.Text() + " [checked]")}
			resp = &r
		}
		return resp, err
	})
	g := mustNew(t, router.Config{Model: m, System: "Route.", Middleware: []middleware.Middleware{tag}})
	res, err := g.Invoke(context.Background(), react.Input("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if ans, _ := react.Answer(res.State); ans != "Hello. [checked]" || seen != 1 {
		t.Errorf("answer %q after %d wrapped calls", ans, seen)
	}
	pii, err := middleware.PII(middleware.PIIConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := router.New(router.Config{Model: m, Middleware: []middleware.Middleware{pii}}); err == nil || !strings.Contains(err.Error(), `"pii" has turn hooks`) {
		t.Errorf("New with a tool middleware: %v", err)
	}
}

// The router's tool and agent calls go through the caller's tool hooks,
// inside the deadline (the router's own outermost middleware) and
// outside approval: the hook sees the call's deadline, and a write tool's
// approval outcome.
func TestRouterToolMiddleware(t *testing.T) {
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("find_tables", `{}`), llmtest.Call("drop_table", `{}`)),
		llmtest.Text("Done."),
	)
	var r ran
	var seen []string
	spy := middleware.ToolFunc("spy", func(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
		_, has := ctx.Deadline()
		res, err := next(ctx, c)
		if res != nil {
			seen = append(seen, fmt.Sprintf("%s deadline=%v approval=%s", c.Call.Name, has, res.Approval))
		}
		return res, err
	})
	drop := tool.MustFunc("drop_table", "Drops a table.", func(context.Context, struct{}) (string, error) { return "dropped", nil })
	g := mustNew(t, router.Config{Model: m, Deadline: time.Hour, Middleware: []middleware.Middleware{spy},
		Tools: []tool.Tool{fixedTool(&r, "find_tables", "orders"), drop}})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	if _, err := g.Invoke(context.Background(), react.Input("Drop the tables."), opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("err %v; want the drop to wait for approval", err)
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Reject("no")))...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	want := []string{"drop_table deadline=true approval=rejected", "find_tables deadline=true approval="}
	if !slices.Equal(seen, want) {
		t.Errorf("the hook saw %q; want %q", seen, want)
	}
}
