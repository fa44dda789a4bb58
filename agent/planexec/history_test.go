package planexec_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// On a 500-turn thread with a token budget from Options, the intent
// check, the planner and the delivery see a bounded conversation, and a
// step of 30 tool rounds keeps its own requests within the budget by
// dropping its oldest rounds.
func TestHistoryBoundsEveryPhase(t *testing.T) {
	const budget = 1500
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask).Repeat()
	m.When(node(planexec.PlanNode), simplePlan(planexec.Step{ID: "a", Title: "Read", Description: "Read the notes."})).Repeat()
	m.When(node(planexec.DeliverNode), llmtest.Text("Delivered.")).Repeat()
	var mu sync.Mutex
	rounds := 0
	m.When(func(r *llmtest.Request) bool {
		if !inStep("a")(r) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		rounds++
		return rounds > 30
	}, llmtest.Text("read them all")).Repeat()
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("notes", `{}`))).Repeat()
	notes := tool.MustFunc("notes", "Read the next page of notes.", func(context.Context, struct{}) (string, error) {
		return strings.Repeat("a long page of notes ", 30), nil
	}, tool.ReadOnly())

	o, err := planexec.DecodeOptions(fmt.Appendf(nil, `{"history": {"policy": "token_budget", "max_tokens": %d}}`, budget))
	if err != nil {
		t.Fatal(err)
	}
	cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{notes}}
	if err := o.Apply(&cfg, nil); err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, cfg)
	var long []llm.Message
	for i := range 500 {
		long = append(long, llm.User(fmt.Sprintf("old question %d", i)), llm.Assistant(fmt.Sprintf("old answer %d", i)))
	}
	input := append(graph.Writes(planexec.Messages.Set(long)), planexec.Input("Read my notes")...)
	res, err := g.Invoke(t.Context(), input)
	if err != nil {
		t.Fatal(err)
	}
	if answer(t, res) != "Delivered." {
		t.Fatal("not delivered")
	}
	if n := len(planexec.Messages.Get(res.State)); n < 1001 {
		t.Errorf("the thread holds %d messages; want all", n)
	}
	tokens := func(msgs []llm.Message) int {
		n := 0
		for _, msg := range msgs {
			n += history.Estimate.Count(msg)
		}
		return n
	}
	phases := map[string]int{}
	steps, maxResults := 0, 0
	for _, r := range m.Requests() {
		switch {
		case inStep("a")(&r):
			steps++
			results := 0
			for _, msg := range r.Messages {
				if msg.Role == llm.RoleTool {
					results++
				}
			}
			maxResults = max(maxResults, results)
			if n := tokens(r.Messages); n > budget {
				t.Errorf("step request %d: %d tokens; want at most %d", r.N, n, budget)
			}
		case r.Node == planexec.IntentNode || r.Node == planexec.PlanNode || r.Node == planexec.DeliverNode:
			phases[r.Node]++
			old := 0
			for _, msg := range r.Messages {
				if strings.HasPrefix(msg.Text(), "old ") {
					old++
				}
			}
			if old == 0 || old > 200 || !strings.Contains(r.Messages[len(r.Messages)-1].Text()+r.LastUser(), "Read my notes") && r.Node != planexec.DeliverNode {
				t.Errorf("%s request carries %d old messages; want some, fewer than 200", r.Node, old)
			}
			if r.Node != planexec.DeliverNode && tokens(r.Messages) > budget {
				t.Errorf("%s request: %d tokens; want at most %d", r.Node, tokens(r.Messages), budget)
			}
		}
	}
	if steps != 31 || maxResults == 0 || maxResults >= 30 {
		t.Errorf("%d step requests carrying at most %d tool results; want 31, the oldest rounds dropped", steps, maxResults)
	}
	if len(phases) != 3 {
		t.Errorf("phase requests %v; want intent, plan and deliver", phases)
	}
	bad, _ := planexec.DecodeOptions([]byte(`{"history": {"policy": "last_turns"}}`))
	if err := bad.Apply(&planexec.Config{Model: m}, nil); err == nil || !strings.Contains(err.Error(), "history") {
		t.Errorf("last_turns without turns: %v", err)
	}
}

// summariseRun runs a task (no intent check, a complex plan, so the plan
// node asks twice, checked steps) on a 20-turn thread with a summarising
// history policy whose summariser is summ. It returns the final state and
// the planner model.
func summariseRun(t *testing.T, summ llm.Model) (graph.State, *llmtest.Model) {
	t.Helper()
	m := llmtest.New()
	m.When(node(planexec.PlanNode), planReply("complex", nil, planexec.Step{ID: "a", Title: "Read", Description: "Read the notes.", DoneWhen: "the notes are read"})).Repeat()
	m.When(inStep("a"), llmtest.Text("read them")).Repeat()
	m.When(node(planexec.StepNode), llmtest.JSON(map[string]any{"done": true})).Repeat()
	m.When(node(planexec.DeliverNode), llmtest.Text("Delivered.")).Repeat()
	cfg := planexec.Config{
		Model: m, PlanMode: true, TaskOnly: true, CheckSteps: true, Logger: quiet,
		History: history.Summarize{Model: summ, KeepTurns: 2, MaxTurns: 4},
	}
	var long []llm.Message
	for i := range 20 {
		long = append(long, llm.User(fmt.Sprintf("old question %d", i)), llm.Assistant(fmt.Sprintf("old answer %d", i)))
	}
	input := append(graph.Writes(planexec.Messages.Set(long)), planexec.Input("Read my notes")...)
	res, err := mustNew(t, cfg).Invoke(t.Context(), input)
	if err != nil {
		t.Fatal(err)
	}
	if answer(t, res) != "Delivered." {
		t.Fatal("not delivered")
	}
	return res.State, m
}

// The planner phases' history policy is the History middleware of their
// chain: the plan node's two calls (quick and deeper) summarise once and
// the summary is saved; later phases reuse it; the planning dialogue and
// the delivery's report are not history; the judge, which has no
// conversation, goes through the chain too.
func TestPhasesSummariseThroughTheChain(t *testing.T) {
	summ := llmtest.New()
	summ.When(nil, llmtest.Text("THE SUMMARY")).Repeat()
	state, m := summariseRun(t, summ)
	if n := len(summ.Requests()); n != 1 {
		t.Errorf("the summariser was asked %d times; want once (the plan node's second call reuses the first call's summary)", n)
	}
	if s := planexec.ConversationSummary.Get(state); s.Text != "THE SUMMARY" || s.Messages == 0 {
		t.Errorf("saved summary %+v; want the summariser's, covering the old turns", s)
	}
	phases := 0
	for _, r := range m.Requests() {
		if r.Node != planexec.PlanNode && r.Node != planexec.DeliverNode {
			continue
		}
		phases++
		all := ""
		for _, msg := range r.Messages {
			all += msg.Text() + "\n"
		}
		if !strings.Contains(all, "THE SUMMARY") || strings.Contains(all, "old question 3\n") {
			t.Errorf("%s request %d: want the summary in place of the old turns:\n%s", r.Node, r.N, all)
		}
		if r.Node == planexec.DeliverNode && !strings.Contains(r.LastUser(), "The steps and their results") {
			t.Errorf("the delivery's last message %q; want its report", r.LastUser())
		}
	}
	if phases < 3 {
		t.Errorf("%d plan and deliver requests; want the quick plan, the deeper plan and the delivery", phases)
	}
	if len(requestsFrom(m, node(planexec.StepNode))) == 0 {
		t.Error("the judge was not asked")
	}
}

// When the policy fails (the summariser cannot be reached), the phases
// send the whole conversation and the run goes on: a long request is
// better than a dead run. No summary is saved.
func TestPhasesSendTheWholeConversationWhenThePolicyFails(t *testing.T) {
	summ := llmtest.New()
	summ.When(nil, llmtest.StatusError(503, "the summariser is down")).Repeat()
	state, m := summariseRun(t, summ)
	if len(summ.Requests()) == 0 {
		t.Fatal("the summariser was never asked")
	}
	if s := planexec.ConversationSummary.Get(state); !s.IsZero() {
		t.Errorf("saved summary %+v; want none", s)
	}
	for _, r := range requestsFrom(m, node(planexec.PlanNode)) {
		old := 0
		for _, msg := range r.Messages {
			if strings.HasPrefix(msg.Text(), "old ") {
				old++
			}
		}
		if old != 40 {
			t.Errorf("plan request %d carries %d old messages; want all 40", r.N, old)
		}
	}
}
