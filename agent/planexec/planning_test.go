package planexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// planning scripts a task whose plan is one step, after the given planner
// turns (questions, bad replies) end with the plan.
func planning(plannerTurns ...llmtest.Turn) *llmtest.Model {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask)
	m.When(node(planexec.PlanNode), plannerTurns...)
	m.When(inStep("a"), llmtest.Text("found"))
	m.When(node(planexec.DeliverNode), llmtest.Text("Done."))
	return m
}

// The full flow: the planner asks (select), the answer reaches it as the
// ask call's result, the plan runs and is delivered.
func TestAskSelect(t *testing.T) {
	m := planning(
		askCall(`{"mode":"select","question":"Which city?","options":["Oslo","Rome"]}`),
		simplePlan(st("a", "Find")),
	)
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	opts := thread(checkpoint.NewMemory(), "ask")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan a trip"), opts...)
	in := interrupted(t, res, err)
	q, ok := planexec.AskFrom(in)
	want := planexec.Ask{Kind: planexec.AskKind, Mode: planexec.AskSelect, Question: "Which city?", Options: []string{"Oslo", "Rome"}}
	if !ok || !cmp.Equal(want, q) {
		t.Fatalf("question = %+v, %v; want %+v", q, ok, want)
	}
	if in.Node != planexec.AskNode || in.Namespace != "" {
		t.Errorf("interrupt from node %q namespace %q", in.Node, in.Namespace)
	}
	// The interrupt says what answer fits: one of the options.
	if want := `{"anyOf":[{"enum":["Oslo","Rome"],"type":"string"},{"additionalProperties":false,"properties":{"choice":{"enum":["Oslo","Rome"],"type":"string"}},"required":["choice"],"type":"object"}]}`; string(in.Schema) != want {
		t.Errorf("answer schema %s, want %s", in.Schema, want)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.ChoiceAnswer("rome")))...)
	if err != nil {
		t.Fatal(err)
	}
	if answer(t, res) != "Done." {
		t.Errorf("answer = %q", answer(t, res))
	}
	plans := requestsFrom(m, node(planexec.PlanNode))
	sent := plans[1].Messages
	last := sent[len(sent)-1]
	if last.Role != llm.RoleTool || last.Text() != "The user answered: Rome" {
		t.Errorf("the planner's second request ends with %+v; want the answer as the ask call's result", last)
	}
	if got := planexec.Rounds.Get(res.State); got != 5 {
		t.Errorf("rounds = %d; want 5 (intent, 2 planning, step, delivery)", got)
	}
}

// A form answer that does not fit its fields is asked again, as a new
// interrupt carrying the problems; the fitting answer reaches the planner.
func TestAskFormReasked(t *testing.T) {
	m := planning(
		askCall(`{"mode":"form","question":"Trip details","fields":[`+
			`{"key":"days","label":"Days","type":"number","required":true,"min":1,"max":14},`+
			`{"key":"style","label":"Style","type":"select","options":["calm","busy"]},`+
			`{"key":"note","label":"Note","type":"text","max":10}]}`),
		simplePlan(st("a", "Find")),
	)
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	opts := thread(checkpoint.NewMemory(), "form")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan a trip"), opts...)
	first := interrupted(t, res, err)
	q, _ := planexec.AskFrom(first)
	if q.Mode != planexec.AskForm || len(q.Fields) != 3 || q.Fields[0].Max == nil || *q.Fields[0].Max != 14 {
		t.Fatalf("question = %+v", q)
	}

	bad := planexec.FormAnswer(map[string]any{"days": 30, "style": "wild", "note": "far too long a note", "extra": 1})
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(bad))...)
	second := interrupted(t, res, err)
	if second.ID == first.ID {
		t.Error("the question was asked again under the same interrupt ID")
	}
	again, _ := planexec.AskFrom(second)
	wantProblems := []string{"Days must be at most 14", "Style must be one of calm, busy", "Note must be at most 10 characters long", `"extra" is not a field of this form`}
	if d := cmp.Diff(wantProblems, again.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if len(requestsFrom(m, node(planexec.PlanNode))) != 1 {
		t.Error("the planner was asked again before the form was answered")
	}

	good := planexec.FormAnswer(map[string]any{"days": "5", "style": "Calm"})
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(good))...)
	if err != nil {
		t.Fatal(err)
	}
	sent := requestsFrom(m, node(planexec.PlanNode))[1].Messages
	if got := sent[len(sent)-1].Text(); got != `The user answered: {"days":5,"style":"calm"}` {
		t.Errorf("the planner got %q", got)
	}
	if answer(t, res) != "Done." {
		t.Error("not delivered")
	}
}

// After MaxAsks questions the ask tool may no longer be called: a fourth
// question is refused (no interrupt) and the planner must give the plan.
func TestAskLimitForcesPlan(t *testing.T) {
	q := askCall(`{"mode":"text","question":"More?"}`)
	m := planning(q, q, q, q, simplePlan(st("a", "Find")))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	opts := thread(checkpoint.NewMemory(), "limit")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan"), opts...)
	asked := 0
	for errors.Is(err, graph.ErrInterrupted) {
		asked++
		interrupted(t, res, err)
		res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("yes")))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if asked != 3 {
		t.Errorf("the person was asked %d times; want 3", asked)
	}
	plans := requestsFrom(m, node(planexec.PlanNode))
	if len(plans) != 5 {
		t.Fatalf("%d planner requests; want 3 asks + the refused one + its correction", len(plans))
	}
	for i, r := range plans[:3] {
		if r.ToolChoice.Mode == llm.ToolChoiceNone {
			t.Errorf("request %d forbade asking", i+1)
		}
	}
	forced := plans[3]
	if forced.ToolChoice.Mode != llm.ToolChoiceNone || !strings.Contains(forced.LastUser(), "You have asked 3 questions") {
		t.Errorf("the fourth request (tool choice %q) does not force a plan: %q", forced.ToolChoice.Mode, forced.LastUser())
	}
	if !strings.Contains(plans[4].LastUser(), "No more questions can be asked") {
		t.Errorf("the refused question was not corrected: %q", plans[4].LastUser())
	}
	if answer(t, res) != "Done." {
		t.Error("not delivered")
	}
}

// Plan review: approve runs the plan; edit runs the edited plan (an
// invalid edit is asked again with the problem); reject plans again with
// the feedback.
func TestPlanReview(t *testing.T) {
	start := func(t *testing.T, m *llmtest.Model) (*graph.Graph, []graph.RunOption, graph.InterruptInfo) {
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, ConfirmPlan: true})
		opts := thread(checkpoint.NewMemory(), "review")
		res, err := g.Invoke(context.Background(), planexec.Input("go"), opts...)
		in := interrupted(t, res, err)
		r, ok := planexec.ReviewFrom(in)
		if !ok || len(r.Plan.Steps) != 1 || r.Plan.Steps[0].ID != "a" {
			t.Fatalf("review = %+v, %v", r, ok)
		}
		if sch := string(in.Schema); !strings.Contains(sch, `"action"`) || !strings.Contains(sch, `"feedback"`) {
			t.Errorf("the review's answer schema %s does not describe a ReviewDecision", sch)
		}
		if len(requestsFrom(m, inStep("a"))) != 0 {
			t.Fatal("a step ran before the plan was confirmed")
		}
		return g, opts, in
	}
	resume := func(g *graph.Graph, opts []graph.RunOption, d planexec.ReviewDecision) (*graph.Result, error) {
		return g.Invoke(context.Background(), nil, append(opts, graph.WithResume(d))...)
	}

	t.Run("approve", func(t *testing.T) {
		m := planning(simplePlan(st("a", "Find")))
		g, opts, _ := start(t, m)
		res, err := resume(g, opts, planexec.ApprovePlan())
		if err != nil || answer(t, res) != "Done." {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("edit", func(t *testing.T) {
		m := planning(simplePlan(st("a", "Find")))
		m.When(inStep("x"), llmtest.Text("x done"))
		g, opts, first := start(t, m)
		invalid := planexec.Plan{Task: "t", Steps: []planexec.Step{st("x", "Other", "ghost")}}
		res, err := resume(g, opts, planexec.EditPlan(invalid))
		second := interrupted(t, res, err)
		r, _ := planexec.ReviewFrom(second)
		if second.ID == first.ID || !strings.Contains(r.Problem, `depends on "ghost"`) || r.Plan.Steps[0].ID != "x" {
			t.Fatalf("asked again with %+v (ID %s, first %s)", r, second.ID, first.ID)
		}
		valid := planexec.Plan{Task: "t", Steps: []planexec.Step{st("x", "Other")}}
		res, err = resume(g, opts, planexec.EditPlan(valid))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[string]planexec.StepStatus{"x": planexec.StepDone}, stepStatuses(res.State)); d != "" {
			t.Errorf("steps run (-want +got):\n%s", d)
		}
	})
	t.Run("reject", func(t *testing.T) {
		m := planning(simplePlan(st("a", "Find")), simplePlan(st("a", "Find better")))
		g, opts, _ := start(t, m)
		res, err := resume(g, opts, planexec.RejectPlan("look in the archive"))
		in := interrupted(t, res, err)
		r, _ := planexec.ReviewFrom(in)
		if r.Plan.Steps[0].Title != "Find better" {
			t.Errorf("the new plan is %+v", r.Plan)
		}
		if got := requestsFrom(m, node(planexec.PlanNode))[1].LastUser(); !strings.Contains(got, "look in the archive") {
			t.Errorf("the planner was not given the feedback: %q", got)
		}
		res, err = resume(g, opts, planexec.ApprovePlan())
		if err != nil || answer(t, res) != "Done." {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown action", func(t *testing.T) {
		m := planning(simplePlan(st("a", "Find")))
		g, opts, _ := start(t, m)
		res, err := resume(g, opts, planexec.ReviewDecision{Action: "maybe"})
		r, _ := planexec.ReviewFrom(interrupted(t, res, err))
		if !strings.Contains(r.Problem, `"maybe" is not one of`) {
			t.Errorf("problem = %q", r.Problem)
		}
	})
}

// A plan with a cycle or an unknown dependency never runs: the planner is
// told the problem, and when it keeps sending such plans (and
// OnPlanFailure is PlanFallbackFail) the run fails with an error naming
// it, before any step.
func TestInvalidPlans(t *testing.T) {
	cyclic := simplePlan(st("a", "A", "b"), st("b", "B", "a"))
	unknown := simplePlan(st("a", "A", "ghost"))
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
		want string
	}{
		{"cycle", cyclic, "a → b → a"},
		{"unknown dependency", unknown, `depends on "ghost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := planning(tc.turn, tc.turn, tc.turn)
			g := mustNew(t, planexec.Config{Model: m, PlanMode: true, OnPlanFailure: planexec.PlanFallbackFail})
			_, err := g.Invoke(context.Background(), planexec.Input("go"))
			if !errors.Is(err, llm.ErrContract) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want a contract error saying %q", err, tc.want)
			}
			if n := len(requestsFrom(m, inStep("a"))); n != 0 {
				t.Errorf("%d step requests; want none", n)
			}
		})
	}
	t.Run("not json", func(t *testing.T) {
		m := planning(llmtest.Text("I would search first."), askCall(`{"mode":"text"}`), simplePlan(st("a", "A")))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true})
		res, err := g.Invoke(context.Background(), planexec.Input("go"))
		if err != nil || answer(t, res) != "Done." {
			t.Fatalf("err = %v", err)
		}
		plans := requestsFrom(m, node(planexec.PlanNode))
		if got := plans[1].LastUser(); !strings.Contains(got, "no JSON object found") {
			t.Errorf("the first correction: %q", got)
		}
		// Without AskMode a question is a bad reply too.
		if got := plans[2].LastUser(); !strings.Contains(got, "No more questions can be asked") {
			t.Errorf("the second correction: %q", got)
		}
	})
	t.Run("corrected", func(t *testing.T) {
		m := planning(cyclic, simplePlan(st("a", "A")))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true})
		res, err := g.Invoke(context.Background(), planexec.Input("go"))
		if err != nil || answer(t, res) != "Done." {
			t.Fatalf("err = %v", err)
		}
		if got := requestsFrom(m, node(planexec.PlanNode))[1].LastUser(); !strings.Contains(got, "a → b → a") {
			t.Errorf("the correction does not name the cycle: %q", got)
		}
	})
}

// A complex task gets a second planning call, with reasoning on, whose
// plan is the one that runs.
func TestComplexTaskPlansDeeper(t *testing.T) {
	m := planning(planReply("complex", nil, st("a", "Rough")), llmtest.JSON(planexec.Plan{Task: "t", Steps: []planexec.Step{st("a", "Refined")}}))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true})
	res, err := g.Invoke(context.Background(), planexec.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	plans := requestsFrom(m, node(planexec.PlanNode))
	if len(plans) != 2 || plans[1].Reasoning == nil || !plans[1].Reasoning.Enabled || plans[0].Reasoning != nil {
		t.Fatalf("%d planner requests; the second must turn reasoning on", len(plans))
	}
	if got := planexec.CurrentPlan.Get(res.State).Steps[0].Title; got != "Refined" {
		t.Errorf("the plan that ran is %q", got)
	}
}
