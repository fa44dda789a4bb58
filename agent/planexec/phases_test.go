package planexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// Each phase's requests go to its own model with its own options: the
// intent check, the planner while it may ask, the planner once it may not,
// the steps, the judge and the delivery. A phase without settings stays on
// Config.Model.
func TestPhaseSettings(t *testing.T) {
	base := llmtest.New(llmtest.WithName("test:base"))
	base.When(node(planexec.IntentNode), isTask)
	asker := llmtest.New(llmtest.WithName("test:asker"))
	asker.When(node(planexec.PlanNode), askCall(`{"mode":"text","question":"Which city?"}`))
	planner := llmtest.New(llmtest.WithName("test:planner"))
	planner.When(node(planexec.PlanNode), simplePlan(planexec.Step{ID: "a", Title: "Find", DoneWhen: "a price is given"}))
	executor := llmtest.New(llmtest.WithName("test:executor"))
	executor.When(inStep("a"), llmtest.Text("it costs 10"))
	judge := llmtest.New(llmtest.WithName("test:judge"))
	judge.When(node(planexec.StepNode), llmtest.JSON(map[string]any{"done": true}))
	deliverer := llmtest.New(llmtest.WithName("test:deliver"))
	deliverer.When(node(planexec.DeliverNode), llmtest.Text("Delivered."))

	g := mustNew(t, planexec.Config{
		Model: base, PlanMode: true, AskMode: true, MaxAsks: 1, CheckSteps: true,
		Phases: planexec.Phases{
			Ask:     llm.Settings{Model: asker},
			Plan:    llm.Settings{Model: planner, Temperature: ptr(0.1), MaxTokens: 800},
			Execute: llm.Settings{Model: executor, ReasoningEffort: "low"},
			Judge:   llm.Settings{Model: judge, Temperature: ptr(0.0)},
			Deliver: llm.Settings{Model: deliverer, TopP: ptr(0.5)},
		},
	})
	opts := thread(checkpoint.NewMemory(), "phases")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan a trip"), opts...)
	interrupted(t, res, err)
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("Lisbon")))...)
	if err != nil {
		t.Fatal(err)
	}
	if answer(t, res) != "Delivered." {
		t.Fatal("not delivered")
	}
	counts := map[string]int{"base": len(base.Requests()), "asker": len(asker.Requests()), "planner": len(planner.Requests()),
		"executor": len(executor.Requests()), "judge": len(judge.Requests()), "deliver": len(deliverer.Requests())}
	want := map[string]int{"base": 1, "asker": 1, "planner": 1, "executor": 1, "judge": 1, "deliver": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s model got %d requests; want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	// The Ask phase falls back on Plan's options it does not set.
	if r := asker.LastRequest(); r.Temperature == nil || *r.Temperature != 0.1 || r.MaxTokens != 800 {
		t.Errorf("ask request: temperature %v, max tokens %d; want Plan's 0.1 and 800", r.Temperature, r.MaxTokens)
	}
	if r := executor.LastRequest(); r.Reasoning == nil || !r.Reasoning.Enabled || r.Reasoning.Effort != "low" {
		t.Errorf("step request reasoning = %+v; want low effort", r.Reasoning)
	}
	if r := judge.LastRequest(); r.Temperature == nil || *r.Temperature != 0 || r.LastUser() != "it costs 10" || !strings.Contains(r.System(), "a price is given") {
		t.Errorf("judge request: temperature %v, user %q, system %q", r.Temperature, r.LastUser(), r.System())
	}
	if r := deliverer.LastRequest(); r.TopP == nil || *r.TopP != 0.5 {
		t.Errorf("deliver request top_p = %v", r.TopP)
	}
	if r := base.LastRequest(); r.Temperature != nil || r.TopP != nil {
		t.Error("the intent check got another phase's options")
	}
}

// Bad settings are refused by New, naming the phase and the field.
func TestPhaseSettingsChecked(t *testing.T) {
	_, err := planexec.New(planexec.Config{Model: llmtest.New(), Phases: planexec.Phases{
		Judge: llm.Settings{Temperature: ptr(5.0)}, Execute: llm.Settings{ReasoningEffort: "extreme"},
	}})
	if err == nil || !strings.Contains(err.Error(), "Phases.Judge.Temperature") || !strings.Contains(err.Error(), "Phases.Execute.ReasoningEffort") {
		t.Errorf("err = %v", err)
	}
}

// Prompts are templates over PromptData: the planner's, the step task's
// and the delivery's use their fields, and the agent still adds what the
// contract needs.
func TestPromptTemplates(t *testing.T) {
	m := executing(simplePlan(st("a", "Prices"), st("b", "Compare", "a")))
	stepOf := func(id string) llmtest.Matcher {
		return llmtest.And(llmtest.Namespace(planexec.StepNode+":"), llmtest.LastUserContains("; step "+id+" ("))
	}
	m.When(stepOf("a"), llmtest.Text("10 and 12"))
	m.When(stepOf("b"), llmtest.Text("the first"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Name: "shopper", Tools: nil,
		Prompts: planexec.Prompts{
			Plan:     "{{.Name}} plans; it may ask {{.MaxAsks}} questions.",
			StepTask: "Task {{.Task}}; step {{.Step.ID}} ({{.Step.Title}}).{{range .Results}} {{.ID}} said: {{.Result}}.{{end}}",
			Deliver:  "Sum up {{len .Steps}} steps:{{range .Results}} {{.ID}}={{.Status}}{{end}}.",
		}})
	res, err := g.Invoke(context.Background(), planexec.Input("Compare"))
	if err != nil {
		t.Fatal(err)
	}
	answer(t, res)
	plan := requestsFrom(m, node(planexec.PlanNode))[0].System()
	if !strings.HasPrefix(plan, "shopper plans; it may ask 3 questions.") || !strings.Contains(plan, `"complexity"`) {
		t.Errorf("plan system prompt:\n%s", plan)
	}
	if got := requestsFrom(m, stepOf("b"))[0].LastUser(); got != "Task the task; step b (Compare). a said: 10 and 12." {
		t.Errorf("b's task = %q", got)
	}
	if got := requestsFrom(m, node(planexec.DeliverNode))[0].System(); got != "Sum up 2 steps: a=done b=done." {
		t.Errorf("deliver system = %q", got)
	}
}

// A template that does not parse, or names a field PromptData lacks, is
// refused by New with the prompt's name.
func TestPromptTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		prompts planexec.Prompts
		want    string
	}{
		{planexec.Prompts{Step: "{{.Tools"}, "Prompts.Step does not parse"},
		{planexec.Prompts{Judge: "{{.Budget}}"}, "Prompts.Judge fails on sample data"},
	} {
		_, err := planexec.New(planexec.Config{Model: llmtest.New(), PlanMode: true, Prompts: tc.prompts})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v; want %q", err, tc.want)
		}
	}
}

// MaxAsks is configurable: with one question allowed, the second is
// refused and the planner plans with what it has.
func TestMaxAsksConfigurable(t *testing.T) {
	q := askCall(`{"mode":"text","question":"More?"}`)
	m := planning(q, q, simplePlan(st("a", "Find")))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true, MaxAsks: 1})
	opts := thread(checkpoint.NewMemory(), "one")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan"), opts...)
	interrupted(t, res, err)
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("yes")))...)
	if errors.Is(err, graph.ErrInterrupted) {
		t.Fatal("a second question was put to the person")
	}
	if err != nil || answer(t, res) != "Done." {
		t.Fatalf("err = %v", err)
	}
	plans := requestsFrom(m, node(planexec.PlanNode))
	if !strings.Contains(plans[1].LastUser(), "You have asked 1 questions") {
		t.Errorf("the second planner request does not force a plan: %q", plans[1].LastUser())
	}
}
