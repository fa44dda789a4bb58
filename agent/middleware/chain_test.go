package middleware_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// tracer records the order its hooks run in.
type tracer struct {
	name string
	log  *[]string
}

func (t tracer) Name() string { return t.name }
func (t tracer) WrapModel(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	*t.log = append(*t.log, t.name+">")
	r, err := next(ctx, c)
	*t.log = append(*t.log, "<"+t.name)
	return r, err
}
func (t tracer) WrapTool(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	*t.log = append(*t.log, t.name+">")
	r, err := next(ctx, c)
	*t.log = append(*t.log, "<"+t.name)
	return r, err
}
func (t tracer) BeforeTurn(context.Context, *middleware.Turn) error {
	*t.log = append(*t.log, "before "+t.name)
	return nil
}
func (t tracer) AfterTurn(context.Context, *middleware.Turn) error {
	*t.log = append(*t.log, "after "+t.name)
	return nil
}

func mustChain(t testing.TB, mws ...middleware.Middleware) *middleware.Chain {
	t.Helper()
	c, err := middleware.NewChain(mws...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChainRunsInDeclaredOrder(t *testing.T) {
	var log []string
	c := mustChain(t, tracer{"a", &log}, tracer{"b", &log}, tracer{"c", &log})
	m := llmtest.New().Reply(llmtest.Text("hi"))
	if _, err := c.WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: m}); err != nil {
		t.Fatal(err)
	}
	tool := c.WrapTool(func(context.Context, *middleware.ToolCall) (*middleware.ToolResult, error) {
		log = append(log, "tool")
		return &middleware.ToolResult{}, nil
	})
	if _, err := tool(context.Background(), &middleware.ToolCall{}); err != nil {
		t.Fatal(err)
	}
	_ = c.BeforeTurn(context.Background(), &middleware.Turn{})
	_ = c.AfterTurn(context.Background(), &middleware.Turn{})
	want := []string{"a>", "b>", "c>", "<c", "<b", "<a", "a>", "b>", "c>", "tool", "<c", "<b", "<a",
		"before a", "before b", "before c", "after c", "after b", "after a"}
	if !slices.Equal(log, want) {
		t.Errorf("order:\n got %v\nwant %v", log, want)
	}
	if got := c.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestNewChainReportsEveryProblem(t *testing.T) {
	type bare struct{ middleware.Middleware }
	_, err := middleware.NewChain(nil, tracer{"a", nil}, tracer{"a", nil}, middleware.ModelFunc("", nil), bare{middleware.ModelFunc("x", nil)})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"middleware 0 is nil", `two middleware are named "a"`, "empty name", "implements no hook"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestModelWrapperCanShortCircuitRetryAndSwapModel(t *testing.T) {
	calls := 0
	retry := middleware.ModelFunc("retry", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		var err error
		for range 3 {
			calls++
			var r *llm.Response
			if r, err = next(ctx, c); err == nil {
				return r, nil
			}
		}
		return nil, err
	})
	flaky := llmtest.New().Reply(llmtest.Fail(errors.New("boom")), llmtest.Fail(errors.New("boom")), llmtest.Text("third time"))
	resp, err := mustChain(t, retry).WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: flaky})
	if err != nil || resp.Message.Text() != "third time" || calls != 3 {
		t.Fatalf("retry: %v %v after %d calls", resp, err, calls)
	}

	cached := middleware.ModelFunc("cache", func(context.Context, *middleware.ModelCall, middleware.ModelHandler) (*llm.Response, error) {
		return &llm.Response{Message: llm.Assistant("from cache")}, nil
	})
	unused := llmtest.New()
	resp, err = mustChain(t, cached).WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{}, Model: unused})
	if err != nil || resp.Message.Text() != "from cache" || len(unused.Requests()) != 0 {
		t.Fatalf("short circuit: %v %v, model asked %d times", resp, err, len(unused.Requests()))
	}

	other := llmtest.New().Reply(llmtest.Text("other model"))
	route := middleware.ModelFunc("route", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		c.Model = other
		return next(ctx, c)
	})
	resp, err = mustChain(t, route).WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: unused})
	if err != nil || resp.Message.Text() != "other model" {
		t.Fatalf("route: %v %v", resp, err)
	}
}

func TestTailIsAppendedInnermost(t *testing.T) {
	var seen int
	count := middleware.ModelFunc("count", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		seen = len(c.Request.Messages)
		return next(ctx, c)
	})
	m := llmtest.New().Reply(llmtest.Text("ok"))
	_, err := mustChain(t, count).WrapModel(nil)(context.Background(), &middleware.ModelCall{
		Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: m, Tail: []llm.Message{llm.User("final")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.LastRequest().Messages; seen != 1 || len(got) != 2 || got[1].Text() != "final" {
		t.Errorf("middleware saw %d messages, model got %d", seen, len(got))
	}
}

func TestNilChainPassesThrough(t *testing.T) {
	var c *middleware.Chain
	m := llmtest.New().Reply(llmtest.Text("ok"))
	resp, err := c.WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("x")}}, Model: m})
	if err != nil || resp.Message.Text() != "ok" || c.Len() != 0 {
		t.Fatalf("%v %v", resp, err)
	}
	if _, err := c.WrapModel(nil)(context.Background(), &middleware.ModelCall{Request: &llm.Request{}}); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("missing model: %v", err)
	}
}
