package middleware_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// A prompt template reads the run's context and state keys for each call;
// a template that does not parse is refused when it is built.
func TestPromptTemplateReadsContextAndState(t *testing.T) {
	plan := graph.NewKey[[]string]("plan")
	mw := must(middleware.PromptTemplate("", `You help {{context "user"}}.{{with state "plan"}} Plan: {{index . 0}}.{{end}}{{if state "missing"}} never{{end}}`))
	var got []string
	b := graph.New(plan)
	b.AddNode("n", func(ctx context.Context, s graph.State) (graph.Output, error) {
		h := mustChain(t, mw).WrapModel(func(_ context.Context, c *middleware.ModelCall) (*llm.Response, error) {
			got = append(got, c.Request.Messages[0].Text())
			return &llm.Response{}, nil
		})
		_, err := h(ctx, &middleware.ModelCall{Request: &llm.Request{Messages: []llm.Message{llm.User("hi")}}, State: s})
		return nil, err
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), graph.Writes(plan.Set([]string{"book a room"})), graph.WithRunContext(map[string]string{"user": "Ann"})); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"You help Ann. Plan: book a room.", "You help ."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("prompts %q, want %q", got, want)
	}
	for _, bad := range []string{"", "{{context", "{{nope 1}}"} {
		if _, err := middleware.PromptTemplate("", bad); err == nil {
			t.Errorf("template %q was accepted", bad)
		}
	}
}
