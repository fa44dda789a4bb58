package react_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// loopingModel calls the weather tool whenever tools may be called, and
// answers in text when tool choice is "none" (unless ignoreNone).
func loopingModel(ignoreNone bool) *llmtest.Model {
	m := llmtest.New()
	none := func(r *llmtest.Request) bool { return r.ToolChoice.Mode == llm.ToolChoiceNone }
	if !ignoreNone {
		m.When(none, llmtest.Text("Best I can say: sunny.")).Repeat()
	}
	m.When(nil, llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)).WithText("Checking.")).Repeat()
	return m
}

func TestGracefulFinishUnderStepLimit(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 4, 5} {
		t.Run("", func(t *testing.T) {
			m := loopingModel(false)
			var r ran
			g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}})
			res, err := g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(limit))
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			if res.Status != graph.StatusCompleted {
				t.Errorf("limit %d: status %s", limit, res.Status)
			}
			if got, ok := react.Answer(res.State); !ok || got != "Best I can say: sunny." {
				t.Errorf("limit %d: answer %q, %v", limit, got, ok)
			}
			// Rounds fit while two steps remain after the model's: limit 1
			// and 2 get none, 3 and 4 one, 5 two.
			rounds := (limit - 1) / 2
			if got := r.get("weather:Oslo"); got != rounds {
				t.Errorf("limit %d: %d tool rounds; want %d", limit, got, rounds)
			}
			reqs := m.Requests()
			last := reqs[len(reqs)-1]
			if last.ToolChoice.Mode != llm.ToolChoiceNone || !strings.Contains(last.LastUser(), "step budget") {
				t.Errorf("limit %d: the last request had tool choice %q and last user message %q", limit, last.ToolChoice.Mode, last.LastUser())
			}
			for _, req := range reqs[:len(reqs)-1] {
				if req.ToolChoice.Mode == llm.ToolChoiceNone {
					t.Errorf("limit %d: request %d turned tools off too early", limit, req.N)
				}
			}
			// The instruction is for the request only.
			for _, msg := range react.Messages.Get(res.State) {
				if strings.Contains(msg.Text(), "step budget") {
					t.Errorf("limit %d: the budget instruction was stored: %+v", limit, msg)
				}
			}
		})
	}
}

// A model that calls tools anyway: the calls are dropped with a note and
// the run still ends cleanly.
func TestGracefulFinishDropsLateCalls(t *testing.T) {
	m := loopingModel(true)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, BudgetPrompt: "Out of steps."})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(res.State)
	last := msgs[len(msgs)-1]
	if len(last.ToolCalls) != 0 || last.Role != llm.RoleAssistant {
		t.Fatalf("last message = %+v; want an assistant message without calls", last)
	}
	want := "Checking.\n\n[The step budget ran out, so the tool calls this reply asked for were not run: weather.]"
	if last.Text() != want {
		t.Errorf("last message text = %q; want %q", last.Text(), want)
	}
	if req := m.LastRequest(); req.LastUser() != "Out of steps." {
		t.Errorf("budget prompt = %q", req.LastUser())
	}
	if r.get("weather:Oslo") != 1 {
		t.Errorf("weather ran %d times; want 1", r.get("weather:Oslo"))
	}
	if got := llm.RepairHistory(msgs); len(got) != len(msgs) {
		t.Errorf("the stored history needs repair: %v", roles(msgs))
	}
}

func TestFailOnStepLimit(t *testing.T) {
	m := loopingModel(false)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, FailOnStepLimit: true})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(3))
	var sle *graph.StepLimitError
	if !errors.As(err, &sle) || res.Status != graph.StatusFailed {
		t.Fatalf("err = %v, status %v; want a StepLimitError", err, res.Status)
	}
	for _, req := range m.Requests() {
		if req.ToolChoice.Mode == llm.ToolChoiceNone {
			t.Errorf("request %d turned tools off", req.N)
		}
	}
}

// MaxSteps is the compiled graph's default limit, so it also bounds the
// agent run as a subgraph.
func TestMaxSteps(t *testing.T) {
	m := loopingModel(false)
	var r ran
	g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r)}, MaxSteps: 3})
	res, err := g.Invoke(context.Background(), react.Input("Oslo?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 || r.get("weather:Oslo") != 1 {
		t.Errorf("%d steps, %d tool runs; want 3 and 1", res.Steps, r.get("weather:Oslo"))
	}
	// An explicit run option still wins.
	res, err = g.Invoke(context.Background(), react.Input("Oslo?"), graph.WithStepLimit(5))
	if err != nil || res.Steps != 5 {
		t.Errorf("with WithStepLimit(5): %d steps, err %v", res.Steps, err)
	}
}

// Without tools there is nothing to turn off: no instruction is added.
func TestNoToolsNoBudgetPrompt(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("hi"))
	g := mustNew(t, react.Config{Model: m})
	if _, err := g.Invoke(context.Background(), react.Input("hello"), graph.WithStepLimit(1)); err != nil {
		t.Fatal(err)
	}
	req := m.LastRequest()
	if d := cmp.Diff([]string{"user:hello"}, roles(req.Messages)); d != "" || req.ToolChoice.Mode != "" {
		t.Errorf("request (-want +got):\n%s\ntool choice %q", d, req.ToolChoice.Mode)
	}
}
