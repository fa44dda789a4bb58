package router_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
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
