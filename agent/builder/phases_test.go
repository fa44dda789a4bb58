package builder_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

func ptr[T any](v T) *T { return &v }

// judged is an agent of one node whose edge a model judges.
func judged(t *testing.T, b *builder.Builder, m llm.Model) *builder.Agent {
	t.Helper()
	a, err := b.LLMNode("chat", "You chat.").When("chat", "the user said goodbye", graph.END).Entry("chat").Build(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The judging phase has settings of its own: the judge's requests carry
// them (and go to the phase's model), the node's do not.
func TestJudgeSettingsReachTheJudge(t *testing.T) {
	node := llmtest.New(llmtest.WithName("test:node"))
	node.When(nil, llmtest.Text("Bye!")).Repeat()
	judge := llmtest.New(llmtest.WithName("test:judge"))
	judge.When(nil, llmtest.JSON(map[string]any{"holds": true, "reason": "said bye"})).Repeat()
	set := llm.Settings{Model: judge, Temperature: ptr(0.1), TopP: ptr(0.5), MaxTokens: 64, ReasoningEffort: llm.EffortLow}
	a := judged(t, builder.New("a").JudgeSettings(set), node)
	res, err := a.Run(t.Context(), builder.Input("goodbye"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Judgements) != 1 || !res.Judgements[0].Holds {
		t.Fatalf("judgements = %+v", res.Judgements)
	}
	reqs := judge.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the judge model got %d requests; want 1", len(reqs))
	}
	r := reqs[0].Request
	if r.Temperature == nil || *r.Temperature != 0.1 || r.TopP == nil || *r.TopP != 0.5 || r.MaxTokens != 64 ||
		r.Reasoning == nil || !r.Reasoning.Enabled || r.Reasoning.Effort != llm.EffortLow {
		t.Errorf("judge request options: temperature %v, top-p %v, max tokens %d, reasoning %+v", r.Temperature, r.TopP, r.MaxTokens, r.Reasoning)
	}
	for _, r := range node.Requests() {
		if r.Temperature != nil || r.MaxTokens != 0 || r.Reasoning != nil {
			t.Errorf("a node request carries the judge's settings: %+v", r.Request)
		}
	}
	if _, err := builder.New("a").JudgeSettings(llm.Settings{Temperature: ptr(3.0)}).LLMNode("x", "X.").Entry("x").End("x").Build(node); err == nil ||
		!strings.Contains(err.Error(), "JudgeSettings.Temperature") {
		t.Errorf("a temperature of 3: %v", err)
	}
}

// longThread is a conversation of n turns, each a question and an answer.
func longThread(n int) []llm.Message {
	msgs := make([]llm.Message, 0, 2*n)
	for i := range n {
		msgs = append(msgs, llm.User(fmt.Sprintf("question %d", i)), llm.Assistant(fmt.Sprintf("answer %d", i)))
	}
	return msgs
}

// On a 500-turn thread, the agent's history policy bounds every node
// request and the judge's transcript; the thread keeps every message.
func TestHistoryBoundsNodesAndJudge(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Node(builder.RouteNode("chat")), llmtest.JSON(map[string]any{"holds": false})).Repeat()
	m.When(nil, llmtest.Text("Sure.")).Repeat()
	a := judged(t, builder.New("a").History(history.LastTurns{N: 3}), m)
	input := graph.Writes(react.Messages.Set(append(longThread(500), llm.User("and now?"))))
	res, err := a.Run(t.Context(), input)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(react.Messages.Get(res.FinalState)); n != 1002 {
		t.Errorf("the thread holds %d messages; want all 1002", n)
	}
	var nodes, judges int
	for _, r := range m.Requests() {
		if r.Node == builder.RouteNode("chat") {
			judges++
			text := r.LastUser()
			if strings.Contains(text, "question 10\n") || strings.Contains(text, "question 496") || !strings.Contains(text, "question 498") {
				t.Errorf("the judge's transcript is not the last 3 turns:\n%s", text)
			}
			continue
		}
		nodes++
		if len(r.Messages) > 1+5 { // the system prompt, 2 full turns and the question
			t.Errorf("a node request carries %d messages; want at most 6", len(r.Messages))
		}
	}
	if nodes != 1 || judges != 1 {
		t.Errorf("%d node and %d judge requests; want 1 each", nodes, judges)
	}
	if _, err := builder.New("a").History(history.LastTurns{}).LLMNode("x", "X.").Entry("x").End("x").Build(m); err == nil ||
		!strings.Contains(err.Error(), "LastTurns.N") {
		t.Errorf("a policy keeping 0 turns: %v", err)
	}
}
