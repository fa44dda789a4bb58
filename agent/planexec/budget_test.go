package planexec_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// A step whose model would call tools forever is stopped by its own round
// budget (StepRounds): its last request turns tools off, its result is
// what it had, and the delivery is told the step was cut short.
func TestStepRoundsBudget(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Search")))
	m.When(llmtest.And(inStep("a"), llmtest.LastUserContains("round budget of this step")), llmtest.Text("partial: 2 of 5 found"))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"more"}`))).Repeat()
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, StepRounds: 3, Tools: []tool.Tool{lookup(&c)}})
	res, err := g.Invoke(context.Background(), planexec.Input("Find all five"))
	if err != nil {
		t.Fatal(err)
	}
	r := planexec.Steps.Get(res.State)["a"]
	if r.Status != planexec.StepDone || r.Budget != planexec.BudgetRounds || r.Result != "partial: 2 of 5 found" || r.Requests != 3 {
		t.Errorf("step a = %+v; want done with the rounds budget after 3 requests", r)
	}
	if n := c.get("lookup:more"); n != 2 {
		t.Errorf("lookup ran %d times; want 2 (3 rounds, the last without tools)", n)
	}
	last := requestsFrom(m, inStep("a"))[2]
	if last.ToolChoice.Mode != llm.ToolChoiceNone {
		t.Errorf("the last step request allowed tools (%q)", last.ToolChoice.Mode)
	}
	report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
	for _, want := range []string{"cut short: its budget of model requests (tool rounds) ran out", "Say plainly in the answer which budget ran out"} {
		if !strings.Contains(report, want) {
			t.Errorf("the delivery report lacks %q:\n%s", want, report)
		}
	}
}

// The per-step budget is apart from the task's: by default a step may
// make up to DefaultStepRounds requests, more than a handful of steps
// would need together.
func TestDefaultStepRoundsAllowsLongSteps(t *testing.T) {
	var c counter
	turns := make([]llmtest.Turn, 0, 41)
	for range 40 {
		turns = append(turns, llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"page"}`)))
	}
	turns = append(turns, llmtest.Text("read 40 pages"))
	m := executing(simplePlan(st("a", "Read")))
	m.When(inStep("a"), turns...)
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c)}, MaxSteps: 500})
	res, err := g.Invoke(context.Background(), planexec.Input("Read everything"))
	if err != nil {
		t.Fatal(err)
	}
	r := planexec.Steps.Get(res.State)["a"]
	if r.Budget != "" || r.Result != "read 40 pages" || c.get("lookup:page") != 40 {
		t.Errorf("step a = %+v after %d lookups; want all 40 and no budget", r, c.get("lookup:page"))
	}
}

// The token budget: a step's share runs out (it gives its result with
// tools off), then the task's budget is used up, so the next step never
// starts and the delivery says which budget stopped it.
func TestTokenBudget(t *testing.T) {
	var c counter
	use := func(tokens int64) llm.Usage { return llm.Usage{InputTokens: tokens, Requests: 1} }
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask.WithUsage(use(100)))
	m.When(node(planexec.PlanNode), simplePlan(st("a", "Gather"), st("b", "Summarise", "a")).WithUsage(use(100)))
	m.When(llmtest.And(inStep("a"), llmtest.LastUserContains("token budget of this step")), llmtest.Text("gathered some").WithUsage(use(50)))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"x"}`)).WithUsage(use(900))).Repeat()
	m.When(inStep("b"), llmtest.Text("never"))
	m.When(node(planexec.DeliverNode), llmtest.Text("Partly done."))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, TokenBudget: 1000, Tools: []tool.Tool{lookup(&c)}, Logger: quiet})
	res, err := g.Invoke(context.Background(), planexec.Input("Gather and summarise"))
	if err != nil {
		t.Fatal(err)
	}
	steps := planexec.Steps.Get(res.State)
	if r := steps["a"]; r.Budget != planexec.BudgetTokens || r.Status != planexec.StepDone || r.Tokens != 950 {
		t.Errorf("step a = %+v; want done, tokens budget, 950 tokens", r)
	}
	if _, ran := steps["b"]; ran || len(requestsFrom(m, inStep("b"))) != 0 {
		t.Error("step b ran after the token budget was used up")
	}
	if got := planexec.Stopped.Get(res.State); got != planexec.BudgetTokens {
		t.Errorf("Stopped = %q", got)
	}
	if got := planexec.Tokens.Get(res.State); got < 1150 {
		t.Errorf("Tokens = %d; want at least 1150", got)
	}
	report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
	if !strings.Contains(report, "The token budget of 1000 tokens ran out before steps b could run.") {
		t.Errorf("the delivery report does not say why b did not run:\n%s", report)
	}
}

// The time budget (on a fake clock): a step still working when it passes
// is stopped and fails with the reason; the independent step finishes;
// the next level never starts, and the delivery says time ran out.
func TestTimeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New()
		m.When(node(planexec.IntentNode), isTask)
		m.When(node(planexec.PlanNode), simplePlan(st("slow", "Crawl"), st("x", "Quick"), st("c", "Combine", "x")))
		m.When(inStep("slow"), llmtest.Text("too late").After(2*time.Minute))
		m.When(inStep("x"), llmtest.Text("quick result").After(10*time.Second))
		m.When(inStep("c"), llmtest.Text("never"))
		m.When(node(planexec.DeliverNode), llmtest.Text("Time ran out."))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, TimeBudget: time.Minute, ContinueOnError: true, Logger: quiet})
		res, err := g.Invoke(context.Background(), planexec.Input("Crawl and combine"))
		if err != nil {
			t.Fatal(err)
		}
		steps := planexec.Steps.Get(res.State)
		if r := steps["slow"]; r.Status != planexec.StepFailed || r.Budget != planexec.BudgetTime || !strings.Contains(r.Error, "time budget ran out") {
			t.Errorf("slow = %+v; want failed by the time budget", r)
		}
		if r := steps["x"]; r.Status != planexec.StepDone {
			t.Errorf("x = %+v", r)
		}
		if _, ran := steps["c"]; ran {
			t.Error("c ran after the time budget passed")
		}
		if got := planexec.Stopped.Get(res.State); got != planexec.BudgetTime {
			t.Errorf("Stopped = %q", got)
		}
		report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
		for _, want := range []string{"The time budget of 1m0s passed before steps c could run.", "cut short: the time budget of 1m0s passed"} {
			if !strings.Contains(report, want) {
				t.Errorf("the delivery report lacks %q:\n%s", want, report)
			}
		}
	})
}

// Budgets are checked by New.
func TestBudgetConfigErrors(t *testing.T) {
	_, err := planexec.New(planexec.Config{Model: llmtest.New(), StepRounds: -1, TokenBudget: -5, TimeBudget: -time.Second, OnPlanFailure: "retry"})
	for _, want := range []string{"StepRounds is -1", "TokenBudget is -5", "TimeBudget is -1s", `OnPlanFailure is "retry"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want %q", err, want)
		}
	}
}

// Waiting for a person is not the agent's time: a run resumed after an
// approval has the whole time budget again.
func TestTimeBudgetRestartsOnResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counter
		m := executing(simplePlan(st("a", "Publish"), st("b", "Report", "a")))
		m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"post"}`)).After(40*time.Second),
			llmtest.Text("published").After(40*time.Second))
		m.When(inStep("b"), llmtest.Text("reported").After(40*time.Second))
		cfg := planexec.Config{Model: m, PlanMode: true, TimeBudget: time.Minute, Tools: []tool.Tool{publish(&c)}}
		opts := thread(checkpoint.NewMemory(), "wait")
		res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("Publish and report"), opts...)
		interrupted(t, res, err)
		time.Sleep(time.Hour) // the person takes an hour to approve
		res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
		if err != nil {
			t.Fatal(err)
		}
		steps := planexec.Steps.Get(res.State)
		if steps["a"].Status != planexec.StepDone || steps["a"].Budget != "" {
			t.Errorf("a = %+v; want done within the resumed run's budget", steps["a"])
		}
		// b starts 40s into the resumed run and needs 40s more: the
		// budget passes while it works.
		if steps["b"].Budget != planexec.BudgetTime || steps["b"].Status != planexec.StepFailed {
			t.Errorf("b = %+v; want stopped by the time budget", steps["b"])
		}
		// A budget is a limit, not an error: the run delivers (without
		// ContinueOnError), and the delivery hears why b stopped.
		answer(t, res)
		if report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser(); !strings.Contains(report, "cut short: the time budget of 1m0s passed") {
			t.Errorf("the delivery report:\n%s", report)
		}
	})
}
