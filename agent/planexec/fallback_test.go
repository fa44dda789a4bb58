package planexec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

var notAPlan = llmtest.Text("I think we should start by looking around.")

// A planner that never gives a usable plan does not kill the run: by
// default the request runs as one step, and the answer is delivered.
func TestPlanFallbackSingleStep(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask)
	m.When(node(planexec.PlanNode), notAPlan, notAPlan, notAPlan)
	m.When(inStep("task"), llmtest.Text("did it in one go"))
	m.When(node(planexec.DeliverNode), llmtest.Text("Done anyway."))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
	res, err := g.Invoke(context.Background(), planexec.Input("Sort out the offsite"))
	if err != nil {
		t.Fatal(err)
	}
	plan := planexec.CurrentPlan.Get(res.State)
	if len(plan.Steps) != 1 || plan.Task != "Sort out the offsite" || plan.Steps[0].Description != "Sort out the offsite" {
		t.Errorf("fallback plan = %+v", plan)
	}
	if r := planexec.Steps.Get(res.State)["task"]; r.Result != "did it in one go" {
		t.Errorf("the single step = %+v", r)
	}
	if answer(t, res) != "Done anyway." {
		t.Error("not delivered")
	}
}

// With PlanFallbackAsk the person is asked to describe the task once; the
// planner plans again with the answer; when that fails too, the request
// and the description run as one step.
func TestPlanFallbackAsk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again llmtest.Turn
		step  string
	}{
		{"plans with the answer", simplePlan(st("a", "Find")), "a"},
		{"then a single step", notAPlan, "task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.New()
			m.When(node(planexec.IntentNode), isTask)
			m.When(node(planexec.PlanNode), notAPlan, notAPlan, notAPlan, tc.again, tc.again, tc.again)
			m.When(inStep(tc.step), llmtest.Text("found"))
			m.When(node(planexec.DeliverNode), llmtest.Text("Done."))
			g := mustNew(t, planexec.Config{Model: m, PlanMode: true, OnPlanFailure: planexec.PlanFallbackAsk, Logger: quiet})
			opts := thread(checkpoint.NewMemory(), "help")
			res, err := g.Invoke(context.Background(), planexec.Input("Sort it out"), opts...)
			in := interrupted(t, res, err)
			q, ok := planexec.AskFrom(in)
			if !ok || q.Question != planexec.HelpQuestion || q.Mode != planexec.AskText {
				t.Fatalf("interrupt = %s", in.Payload)
			}
			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("find a venue in Lisbon")))...)
			if err != nil {
				t.Fatal(err)
			}
			plans := requestsFrom(m, node(planexec.PlanNode))
			if len(plans) < 4 || !strings.Contains(plans[3].LastUser(), "They said: find a venue in Lisbon") {
				t.Fatalf("the planner did not get the description (%d requests)", len(plans))
			}
			if answer(t, res) != "Done." {
				t.Error("not delivered")
			}
			if tc.step == "task" {
				desc := planexec.CurrentPlan.Get(res.State).Steps[0].Description
				if !strings.Contains(desc, "Sort it out") || !strings.Contains(desc, "find a venue in Lisbon") {
					t.Errorf("the single step's description = %q", desc)
				}
			}
		})
	}
}

func doneWhen(id, title, cond string, deps ...string) planexec.Step {
	s := st(id, title, deps...)
	s.DoneWhen = cond
	return s
}

// A step whose result misses its done_when is sent back to work with what
// is missing; once the judge is satisfied the step keeps the new result.
// The retry is a new task with a fresh loop, on a checkpointed thread too.
func TestDoneWhenRetry(t *testing.T) {
	t.Run("memory", func(t *testing.T) { doneWhenRetry(t, nil) })
	t.Run("checkpointed", func(t *testing.T) { doneWhenRetry(t, thread(checkpoint.NewMemory(), "retry")) })
}

func doneWhenRetry(t *testing.T, opts []graph.RunOption) {
	m := executing(simplePlan(doneWhen("a", "Price", "a price in euros is given")))
	m.When(inStep("a"), llmtest.Text("the venue is nice"), llmtest.Text("the venue costs €900"))
	m.When(node(planexec.StepNode),
		llmtest.JSON(map[string]any{"done": false, "missing": "the price in euros"}),
		llmtest.JSON(map[string]any{"done": true}))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, CheckSteps: true})
	res, err := g.Invoke(context.Background(), planexec.Input("How much?"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	r := planexec.Steps.Get(res.State)["a"]
	if r.Result != "the venue costs €900" || r.Retries != 1 || r.Check != "" || r.Requests != 4 {
		t.Errorf("step a = %+v; want the second result, one retry, 2 loop + 2 judge requests", r)
	}
	reqs := requestsFrom(m, inStep("a"))
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastUser(), "Missing: the price in euros") || !strings.Contains(reqs[1].LastUser(), "the venue is nice") {
		t.Fatalf("the retry was not told its earlier result and what is missing: %d requests", len(reqs))
	}
	if len(reqs[1].Messages) != 2 {
		t.Errorf("the retry's loop holds %d messages; want a fresh loop (system, task)", len(reqs[1].Messages))
	}
	judge := requestsFrom(m, node(planexec.StepNode))
	if len(judge) != 2 || judge[0].LastUser() != "the venue is nice" || !strings.Contains(judge[0].System(), "a price in euros is given") {
		t.Errorf("judge requests: %d", len(judge))
	}
}

// After its retries a step that still misses keeps its result, marked;
// the delivery says so. With ReplanOnMiss, the plan is revised once to
// finish what the step missed.
func TestDoneWhenMiss(t *testing.T) {
	for _, replan := range []bool{false, true} {
		m := executing(simplePlan(doneWhen("a", "Price", "a price is given")))
		m.When(inStep("a"), llmtest.Text("no price found")).Repeat()
		m.When(node(planexec.StepNode), llmtest.JSON(map[string]any{"done": false, "missing": "the price"})).Repeat()
		m.When(node(planexec.ReplanNode), llmtest.JSON(map[string]any{"task": "t", "steps": []planexec.Step{st("b", "Ask the venue", "a")}}))
		m.When(inStep("b"), llmtest.Text("€900, says the venue"))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, CheckSteps: true, ReplanOnMiss: replan})
		res, err := g.Invoke(context.Background(), planexec.Input("How much?"))
		if err != nil {
			t.Fatal(err)
		}
		steps := planexec.Steps.Get(res.State)
		if r := steps["a"]; r.Status != planexec.StepDone || r.Check != "the price" || r.Retries != planexec.DefaultCheckRetries || r.Replanned != replan {
			t.Errorf("replan %v: step a = %+v", replan, r)
		}
		replans := requestsFrom(m, node(planexec.ReplanNode))
		report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
		if !replan {
			if len(replans) != 0 || !strings.Contains(report, "does not meet its goal (a price is given): the price") {
				t.Errorf("without replanning: %d replans; report:\n%s", len(replans), report)
			}
			continue
		}
		if len(replans) != 1 || !strings.Contains(replans[0].LastUser(), "misses its done_when (a price is given): the price") {
			t.Fatalf("with replanning: %d replan requests", len(replans))
		}
		if r := steps["b"]; r.Result != "€900, says the venue" {
			t.Errorf("the added step b = %+v", r)
		}
	}
}

// When the intent check's model fails, the turn ends with a polite reply
// and the thread takes the next message as usual.
func TestIntentModelFailureReplies(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), llmtest.StatusError(503, "overloaded"), llmtest.JSON(map[string]string{"intent": "chat", "reply": "Hi!"}))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet,
		Prompts: planexec.Prompts{Unavailable: "{{.Name}} is unavailable, sorry."}, Name: "desk"})
	opts := thread(checkpoint.NewMemory(), "down")
	res, err := g.Invoke(context.Background(), planexec.Input("Plan my week"), opts...)
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("err %v, status %s", err, res.Status)
	}
	if got := answer(t, res); got != "desk is unavailable, sorry." {
		t.Errorf("answer = %q", got)
	}
	res, err = g.Invoke(context.Background(), planexec.Input("Hello?"), opts...)
	if err != nil || answer(t, res) != "Hi!" {
		t.Fatalf("the next message: %v", err)
	}
	if n := len(planexec.Messages.Get(res.State)); n != 4 {
		t.Errorf("the thread holds %d messages; want both turns (4)", n)
	}
}
