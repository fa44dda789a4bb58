package builder_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
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
