package planexec_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// Options, as trellis.yaml writes them, set the budgets, the checks, the
// phases' models (resolved by name) and options, and the prompts.
func TestOptionsApply(t *testing.T) {
	strong := llmtest.New(llmtest.WithName("test:strong"))
	resolve := func(name string) (llm.Model, error) {
		if name == "strong" {
			return strong, nil
		}
		return nil, fmt.Errorf("no model %q", name)
	}
	o, err := planexec.DecodeOptions([]byte(`{"max_asks": 1, "step_rounds": 7, "time_budget": "90s", "token_budget": 5000,
		"on_plan_failure": "ask", "check_steps": true, "check_retries": 2, "replan_on_miss": true, "system": "Be brief.", "continue_on_error": true, "max_parallel": 3,
		"phases": {"plan": {"model": "strong", "temperature": 0.2}, "judge": {"reasoning_effort": "low", "max_tokens": 300}},
		"prompts": {"deliver": "Sum up {{len .Steps}} steps."}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := planexec.Config{Model: llmtest.New(), RoundBudget: 12}
	if err := o.Apply(&cfg, resolve); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxAsks != 1 || cfg.StepRounds != 7 || cfg.TimeBudget != 90*time.Second || cfg.TokenBudget != 5000 || cfg.RoundBudget != 12 ||
		cfg.OnPlanFailure != planexec.PlanFallbackAsk || !cfg.CheckSteps || cfg.CheckRetries != 2 || !cfg.ReplanOnMiss || cfg.System != "Be brief." || !cfg.ContinueOnError || cfg.MaxParallel != 3 {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.Phases.Plan.Model != llm.Model(strong) || *cfg.Phases.Plan.Temperature != 0.2 || cfg.Phases.Judge.ReasoningEffort != "low" || cfg.Phases.Judge.MaxTokens != 300 {
		t.Errorf("phases = %+v", cfg.Phases)
	}
	if cfg.Prompts.Deliver != "Sum up {{len .Steps}} steps." {
		t.Errorf("prompts = %+v", cfg.Prompts)
	}
	if _, err := planexec.New(cfg); err != nil {
		t.Errorf("the applied config does not build: %v", err)
	}
}

func TestOptionsErrors(t *testing.T) {
	if _, err := planexec.DecodeOptions([]byte(`{"max_questions": 2}`)); err == nil || !strings.Contains(err.Error(), "max_questions") {
		t.Errorf("unknown field: %v", err)
	}
	o, err := planexec.DecodeOptions([]byte(`{"time_budget": "soon", "on_plan_failure": "panic",
		"phases": {"routing": {}, "plan": {"model": "huge", "top_p": 2}}, "prompts": {"summary": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = o.Apply(&planexec.Config{}, func(name string) (llm.Model, error) { return nil, fmt.Errorf("no model %q", name) })
	for _, want := range []string{`time_budget: "soon"`, `on_plan_failure: "panic"`, "phases.routing: no such phase", `phases.plan.model: no model "huge"`, "phases.plan.TopP", "prompts.summary: no such prompt"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want %q", err, want)
		}
	}
}
