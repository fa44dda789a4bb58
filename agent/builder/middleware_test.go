package builder_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// The agent's middleware wraps every LLM node: the user's email is
// redacted in the shared conversation before the first node's model sees
// it, and the second node's reply is redacted too.
func TestMiddlewareOnEveryNode(t *testing.T) {
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Noted."))
	m.When(inNode("review"), llmtest.Text("Reply sent to ann@x.org."))
	pii, err := middleware.PII(middleware.PIIConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a := mustBuild(t, builder.New("support").
		Middleware(pii).
		LLMNode("chat", "You are a support agent.").
		LLMNode("review", "You review answers.").
		Edge("chat", "review").
		Entry("chat").
		End("review"), m)
	res, err := a.Run(context.Background(), builder.Input("I am ann@x.org"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user:I am [REDACTED:email]", "assistant:Noted.", "assistant:Reply sent to [REDACTED:email]."}
	if d := cmp.Diff(want, texts(react.Messages.Get(res.FinalState))); d != "" {
		t.Errorf("conversation (-want +got):\n%s", d)
	}
	for _, r := range m.Requests() {
		if got := r.LastUser(); got != "I am [REDACTED:email]" {
			t.Errorf("node %s saw %q", r.Node, got)
		}
	}
	if _, err := builder.New("x").Middleware(pii, pii).LLMNode("a", "p").Entry("a").End("a").Build(m); err == nil {
		t.Error("a chain with a duplicate name was accepted")
	}
}

// The judge's calls go through the agent's model hooks: a hook that
// rewrites the judge's reply decides the route.
func TestMiddlewareWrapsTheJudge(t *testing.T) {
	const changes = "the reviewer asked for changes"
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Draft."))
	m.When(inNode("review"), llmtest.Text("Fine."))
	m.When(asked(changes), verdict(true))
	judged := 0
	veto := middleware.ModelFunc("veto", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		resp, err := next(ctx, c)
		if err != nil || !strings.Contains(c.Request.Messages[len(c.Request.Messages)-1].Text(), "Condition: ") {
			return resp, err
		}
		judged++
		out := *resp
		out.Message = llm.Assistant(`{"holds": false, "reason": "vetoed"}`)
		return &out, nil
	})
	a := mustBuild(t, builder.New("support").
		Middleware(veto).
		LLMNode("chat", "Write.").
		LLMNode("review", "Review.").
		Edge("chat", "review").
		When("review", changes, "chat").
		End("review").
		Entry("chat"), m)
	res, err := a.Run(context.Background(), builder.Input("When?"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"chat", "review"}, res.Path); d != "" || judged != 1 {
		t.Errorf("path (-want +got):\n%s\njudge calls wrapped: %d", d, judged)
	}
	if len(res.Judgements) != 1 || res.Judgements[0].Holds || res.Judgements[0].Reason != "vetoed" {
		t.Errorf("judgements %+v", res.Judgements)
	}
}
