package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

func ptr[T any](v T) *T { return &v }

// A wrapped model sends the phase's options with every request, on a copy,
// and a Settings.Model replaces the model that answers.
func TestWithSettingsAppliesOptions(t *testing.T) {
	base := llmtest.New(llmtest.WithName("test:base"))
	other := llmtest.New(llmtest.WithName("test:other"))
	other.Otherwise(llmtest.Text("from other"))
	s := llm.Settings{Model: other, Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: 300, ReasoningEffort: "high"}
	m := llm.WithSettings(base, s)
	req := &llm.Request{Messages: []llm.Message{llm.User("hi")}, Reasoning: &llm.Reasoning{BudgetTokens: 2048}}
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "from other" || len(base.Requests()) != 0 {
		t.Fatalf("answered %q with %d requests to the base model; want Settings.Model to answer", resp.Message.Text(), len(base.Requests()))
	}
	got := other.LastRequest()
	if got.Temperature == nil || *got.Temperature != 0.2 || got.TopP == nil || *got.TopP != 0.9 || got.MaxTokens != 300 {
		t.Errorf("request options = temperature %v, top_p %v, max_tokens %d", got.Temperature, got.TopP, got.MaxTokens)
	}
	if r := got.Reasoning; r == nil || !r.Enabled || r.Effort != "high" || r.BudgetTokens != 2048 {
		t.Errorf("reasoning = %+v; want on, effort high, the request's budget kept", r)
	}
	if req.Temperature != nil || req.Reasoning.Effort != "" {
		t.Error("the caller's request was changed")
	}
	if m.Name() != "test:other" {
		t.Errorf("Name() = %q", m.Name())
	}
}

func TestSettingsOffAndFallback(t *testing.T) {
	req := &llm.Request{Reasoning: &llm.Reasoning{Enabled: true}, Temperature: ptr(1.0)}
	llm.Settings{ReasoningEffort: "off"}.Apply(req)
	if req.Reasoning.Enabled || *req.Temperature != 1.0 {
		t.Errorf("after off: reasoning %+v, temperature %v", req.Reasoning, *req.Temperature)
	}
	plan := llm.Settings{Temperature: ptr(0.1), MaxTokens: 100}
	ask := llm.Settings{MaxTokens: 50}.Or(plan)
	if *ask.Temperature != 0.1 || ask.MaxTokens != 50 {
		t.Errorf("Or: %+v", ask)
	}
	if !(llm.Settings{}).IsZero() || ask.IsZero() {
		t.Error("IsZero is wrong")
	}
	base := llmtest.New()
	if llm.WithSettings(base, llm.Settings{}) != llm.Model(base) {
		t.Error("empty settings should return the model itself")
	}
}

func TestSettingsCheck(t *testing.T) {
	err := llm.Settings{Temperature: ptr(3.0), TopP: ptr(0.0), MaxTokens: -1, ReasoningEffort: "max"}.Check("Phases.Plan")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Phases.Plan.Temperature", "Phases.Plan.TopP", "Phases.Plan.MaxTokens", "Phases.Plan.ReasoningEffort"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
	if err := (llm.Settings{Temperature: ptr(0.0), TopP: ptr(1.0), ReasoningEffort: "Low"}).Check("x"); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
}
