package planexec_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// executing scripts a task with the given plan; steps and delivery are
// scripted by the caller.
func executing(plan llmtest.Turn) *llmtest.Model {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask)
	m.When(node(planexec.PlanNode), plan)
	m.When(node(planexec.DeliverNode), llmtest.Text("Delivered.")).Repeat()
	return m
}

// stepRuns returns, for each step task in the path, its graph step.
func stepRuns(res *graph.Result) []int {
	var out []int
	for _, r := range res.Path {
		if r.Node == planexec.StepNode {
			out = append(out, r.Step)
		}
	}
	return out
}

// Two independent steps run in parallel (in one graph step); the step
// that depends on both runs next and sees their results in its prompt.
func TestTwoLevelDAG(t *testing.T) {
	m := executing(simplePlan(st("a", "Prices"), st("b", "Reviews"), st("c", "Compare", "a", "b")))
	m.When(inStep("a"), llmtest.Text("prices: 10 and 12"))
	m.When(inStep("b"), llmtest.Text("reviews: both good"))
	m.When(inStep("c"), llmtest.Text("the first is cheaper"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true})
	res, err := g.Invoke(context.Background(), planexec.Input("Compare"))
	if err != nil {
		t.Fatal(err)
	}
	runs := stepRuns(res)
	if len(runs) != 3 || runs[0] != runs[1] || runs[2] <= runs[1] {
		t.Fatalf("step tasks ran in graph steps %v; want a and b together, then c", runs)
	}
	prompt := requestsFrom(m, inStep("c"))[0].LastUser()
	for _, want := range []string{"[a] Prices:\nprices: 10 and 12", "[b] Reviews:\nreviews: both good"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("c's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(requestsFrom(m, inStep("a"))[0].LastUser(), "Results of the steps") {
		t.Error("a's prompt lists dependency results it does not have")
	}
	if got := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser(); !strings.Contains(got, "the first is cheaper") {
		t.Errorf("delivery did not see the results:\n%s", got)
	}
	if answer(t, res) != "Delivered." {
		t.Error("not delivered")
	}
}

// A write tool inside a step waits for approval; the interrupt surfaces
// from inside the step's loop and is answered in a fresh graph instance on
// the same checkpointer, as another process would. The parallel step that
// finished is not run again, and neither is the approved call's model turn.
func TestApprovalInsideStepResumesElsewhere(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Draft"), st("b", "Check")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"post"}`)), llmtest.Text("published"))
	m.When(inStep("b"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"facts"}`)), llmtest.Text("checked"))
	cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c), publish(&c)}}
	saver := checkpoint.NewMemory()
	opts := thread(saver, "approval")

	res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"), opts...)
	in := interrupted(t, res, err)
	req, ok := tool.ApprovalFrom(in)
	if !ok || req.Tool != "publish" || req.Summary != "Publish post" {
		t.Fatalf("interrupt = %+v", in)
	}
	if !strings.HasPrefix(in.Namespace, planexec.StepNode+":") {
		t.Errorf("the approval's namespace is %q; want the step's", in.Namespace)
	}
	if c.get("lookup:facts") != 1 || c.get("publish:post") != 0 {
		t.Fatalf("before approval: lookup %d, publish %d", c.get("lookup:facts"), c.get("publish:post"))
	}

	res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("publish:post") != 1 || c.get("lookup:facts") != 1 {
		t.Errorf("after approval: publish ran %d times, lookup %d; want 1 and 1", c.get("publish:post"), c.get("lookup:facts"))
	}
	if n := len(requestsFrom(m, inStep("a"))); n != 2 {
		t.Errorf("step a made %d model requests; want 2 (the call, then the answer)", n)
	}
	if n := len(requestsFrom(m, inStep("b"))); n != 2 {
		t.Errorf("step b made %d model requests; want 2: it must not run again", n)
	}
	want := map[string]planexec.StepStatus{"a": planexec.StepDone, "b": planexec.StepDone}
	if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if got := planexec.Steps.Get(res.State)["a"].Result; got != "published" {
		t.Errorf("a's result = %q", got)
	}
	// a's first request was made by the interrupted run and still counts.
	if got := planexec.Rounds.Get(res.State); got != 7 {
		t.Errorf("rounds = %d; want 7 (intent, plan, 2 per step, delivery)", got)
	}
}

// A step may ask a person too; the question names the step.
func TestAskInsideStep(t *testing.T) {
	m := executing(simplePlan(st("a", "Book")))
	m.When(inStep("a"), askCall(`{"mode":"text","question":"Which date?"}`), llmtest.Text("booked for Friday"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, AskMode: true})
	opts := thread(checkpoint.NewMemory(), "step-ask")
	res, err := g.Invoke(context.Background(), planexec.Input("Book it"), opts...)
	q, ok := planexec.AskFrom(interrupted(t, res, err))
	if !ok || q.Step != "a" || q.Question != "Which date?" {
		t.Fatalf("question = %+v", q)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("Friday")))...)
	if err != nil {
		t.Fatal(err)
	}
	sent := requestsFrom(m, inStep("a"))[1].Messages
	if got := sent[len(sent)-1].Text(); got != "Friday" {
		t.Errorf("the step's loop got %q as the answer", got)
	}
	if planexec.Steps.Get(res.State)["a"].Result != "booked for Friday" {
		t.Error("the step did not finish with its answer")
	}
}

// A failed step's dependents are skipped while the independent steps go
// on; ContinueOnError decides whether the agent then delivers or stops.
func TestFailingStep(t *testing.T) {
	plan := simplePlan(st("a", "Fetch"), st("b", "Use", "a"), st("c", "Other"), st("d", "More", "c"))
	script := func() *llmtest.Model {
		m := executing(plan)
		m.When(inStep("a"), llmtest.StatusError(500, "upstream down"))
		m.When(inStep("c"), llmtest.Text("c ok"))
		m.When(inStep("d"), llmtest.Text("d ok"))
		return m
	}
	t.Run("continue", func(t *testing.T) {
		m := script()
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, ContinueOnError: true, Logger: quiet})
		res, err := g.Invoke(context.Background(), planexec.Input("go"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]planexec.StepStatus{"a": planexec.StepFailed, "b": planexec.StepSkipped, "c": planexec.StepDone, "d": planexec.StepDone}
		if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
			t.Errorf("steps (-want +got):\n%s", d)
		}
		steps := planexec.Steps.Get(res.State)
		if !strings.Contains(steps["a"].Error, "upstream down") || !strings.Contains(steps["b"].Error, `"a"`) {
			t.Errorf("errors: a %q, b %q", steps["a"].Error, steps["b"].Error)
		}
		if len(requestsFrom(m, inStep("b"))) != 0 {
			t.Error("the skipped step ran")
		}
		if answer(t, res) != "Delivered." {
			t.Error("not delivered")
		}
	})
	t.Run("stop", func(t *testing.T) {
		m := script()
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
		res, err := g.Invoke(context.Background(), planexec.Input("go"))
		se, ok := errors.AsType[*planexec.StepError](err)
		if !ok || !strings.Contains(se.Failed["a"], "upstream down") || len(se.Failed) != 1 || !strings.Contains(err.Error(), "ContinueOnError") {
			t.Fatalf("err = %v; want a *StepError for a", err)
		}
		// c ran alongside a; d, in the next level, did not start.
		want := map[string]planexec.StepStatus{"a": planexec.StepFailed, "c": planexec.StepDone}
		if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
			t.Errorf("steps (-want +got):\n%s", d)
		}
		if len(requestsFrom(m, node(planexec.DeliverNode))) != 0 {
			t.Error("the agent delivered after a failure without ContinueOnError")
		}
	})
}

// Replanning happens at the end of the level holding a replan step: the
// new plan keeps the finished step, which never runs again, and drops or
// adds the rest.
func TestReplan(t *testing.T) {
	var c counter
	m := executing(planReply("simple", []string{"a"}, st("a", "Survey"), st("b", "Old follow-up", "a")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"survey"}`)), llmtest.Text("survey: two options"))
	m.When(node(planexec.ReplanNode), llmtest.JSON(planexec.Plan{Task: "revised", Steps: []planexec.Step{
		st("a", "Survey again"), // finished: kept as it was, not run
		st("c", "New follow-up", "a"),
	}}))
	m.When(inStep("c"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"option one"}`)), llmtest.Text("option one wins"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c)}})
	var replanned *planexec.Plan
	var final graph.State
	for ev, err := range g.Stream(context.Background(), planexec.Input("go"), graph.WithEvents(graph.EventCustom|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventValues {
			final = ev.State
		}
		if e, ok := planexec.EventFrom(ev); ok && e.Kind == planexec.EventReplanned {
			replanned = e.Plan
		}
	}
	if c.get("lookup:survey") != 1 || c.get("lookup:option one") != 1 {
		t.Errorf("tool runs: a %d, c %d; want 1 each", c.get("lookup:survey"), c.get("lookup:option one"))
	}
	if n := len(requestsFrom(m, inStep("a"))); n != 2 {
		t.Errorf("step a made %d requests; want 2 (it must not run again)", n)
	}
	want := map[string]planexec.StepStatus{"a": planexec.StepDone, "c": planexec.StepDone}
	if d := cmp.Diff(want, stepStatuses(final)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	plan := planexec.CurrentPlan.Get(final)
	if replanned == nil || !cmp.Equal(*replanned, plan) {
		t.Fatalf("replanned event %+v; plan %+v", replanned, plan)
	}
	if plan.Steps[0].Title != "Survey" || len(plan.Steps) != 2 || len(plan.Replan) != 0 {
		t.Errorf("merged plan = %+v; want a as it was, then c, no replan left", plan)
	}
	report := requestsFrom(m, node(planexec.ReplanNode))[0].LastUser()
	if !strings.Contains(report, "survey: two options") {
		t.Errorf("the replanner did not see a's result:\n%s", report)
	}
	if !strings.Contains(requestsFrom(m, inStep("c"))[0].LastUser(), "survey: two options") {
		t.Error("the new step did not get the finished step's result")
	}
}

// Tool packs: tools_add and tools_remove change the tools offered to the
// step's next request; a pack tool called while its pack is out refuses.
// The same holds when the model's replies are streamed.
func TestToolPacks(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(map[bool]string{false: "generate", true: "stream"}[streamed], func(t *testing.T) {
			var c counter
			m := executing(simplePlan(st("a", "Research")))
			m.When(inStep("a"),
				llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"early"}`)),                     // not offered yet
				llmtest.ToolCalls(llmtest.Call(planexec.AddPackToolName, `{"pack":"search"}`)), // add
				llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"tides"}`)),                     // now works
				llmtest.ToolCalls(llmtest.Call(planexec.RemovePackToolName, `{"pack":"search"}`)),
				llmtest.Text("tides at noon"),
			)
			g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Packs: map[string][]tool.Tool{"search": {lookup(&c)}}, Logger: quiet})
			var final graph.State
			if streamed {
				for ev, err := range g.Stream(context.Background(), planexec.Input("go"), graph.WithEvents(graph.EventMessages|graph.EventValues)) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Kind == graph.EventValues {
						final = ev.State
					}
				}
			} else {
				res, err := g.Invoke(context.Background(), planexec.Input("go"))
				if err != nil {
					t.Fatal(err)
				}
				final = res.State
			}
			reqs := requestsFrom(m, inStep("a"))
			offered := make([]bool, len(reqs))
			for i, r := range reqs {
				offered[i] = slices.Contains(r.ToolNames(), "lookup")
				if !slices.Contains(r.ToolNames(), planexec.AddPackToolName) || r.Streamed != streamed {
					t.Errorf("request %d offers %v (streamed %v)", i+1, r.ToolNames(), r.Streamed)
				}
			}
			if d := cmp.Diff([]bool{false, false, true, true, false}, offered); d != "" {
				t.Errorf("lookup offered per request (-want +got):\n%s", d)
			}
			if c.get("lookup:early") != 0 || c.get("lookup:tides") != 1 {
				t.Errorf("lookup ran: early %d, tides %d; want 0 and 1", c.get("lookup:early"), c.get("lookup:tides"))
			}
			refused := reqs[1].Messages[len(reqs[1].Messages)-1]
			if !refused.IsError || !strings.Contains(refused.Text(), `call tools_add with pack "search" first`) {
				t.Errorf("the early call got %+v", refused)
			}
			if planexec.Steps.Get(final)["a"].Result != "tides at noon" {
				t.Error("the step did not finish")
			}
		})
	}
}

// Once the round budget is used up no more steps start, and the agent
// delivers what it has, saying what did not run.
func TestRoundBudget(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "First"), st("b", "Second", "a"), st("c", "Third", "b")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"x"}`)), llmtest.Text("first done"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, RoundBudget: 4, Tools: []tool.Tool{lookup(&c)}})
	res, err := g.Invoke(context.Background(), planexec.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]planexec.StepStatus{"a": planexec.StepDone}, stepStatuses(res.State)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if got := planexec.Rounds.Get(res.State); got != 5 {
		t.Errorf("rounds = %d; want 4 used before delivery, 5 with it", got)
	}
	report := requestsFrom(m, node(planexec.DeliverNode))[0].LastUser()
	if !strings.Contains(report, "budget of 4 model requests ran out before steps b, c") {
		t.Errorf("the delivery request does not say what did not run:\n%s", report)
	}
	if answer(t, res) != "Delivered." {
		t.Error("not delivered")
	}
}

// MaxParallel splits a wide level.
func TestMaxParallel(t *testing.T) {
	m := executing(simplePlan(st("a", "A"), st("b", "B"), st("c", "C")))
	for _, id := range []string{"a", "b", "c"} {
		m.When(inStep(id), llmtest.Text(id+" done"))
	}
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, MaxParallel: 2})
	res, err := g.Invoke(context.Background(), planexec.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	if runs := stepRuns(res); len(runs) != 3 || runs[0] != runs[1] || runs[2] == runs[1] {
		t.Errorf("step tasks ran in graph steps %v; want two, then one", runs)
	}
}

// The agent's custom events arrive in order, between the engine's own.
func TestStreamEvents(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Look"), st("b", "Write", "a")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"x"}`)), llmtest.Text("seen"))
	m.When(inStep("b"), llmtest.Text("written"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c)}})
	var got []string
	for ev, err := range g.Stream(context.Background(), planexec.Input("go")) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := planexec.EventFrom(ev); ok {
			s := string(e.Kind)
			switch {
			case e.Tool != nil:
				s += ":" + e.Tool.Name + ":" + e.Tool.Result
				if e.StepID != "a" || e.Tool.CallID == "" {
					t.Errorf("tool event %+v: want step a and a call ID", e)
				}
			case e.StepID != "":
				s += ":" + e.StepID
			}
			got = append(got, s)
		}
	}
	want := []string{
		"plan_ready",
		"step_started:a", "tool_call:lookup:", "tool_result:lookup:found x", "step_finished:a",
		"step_started:b", "step_finished:b",
		"delivered",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// Waiting for a person is announced between the step loop's interrupt
// event and the run's.
func TestWaitingEvent(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Post")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"x"}`)))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{publish(&c)}})
	var kinds []string
	for ev, err := range g.Stream(context.Background(), planexec.Input("go"), thread(checkpoint.NewMemory(), "w")...) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := planexec.EventFrom(ev); ok {
			kinds = append(kinds, string(e.Kind))
			if e.Kind == planexec.EventWaiting {
				if _, ok := tool.ApprovalFrom(e.Interrupts[0]); !ok || e.StepID != "a" {
					t.Errorf("waiting event %+v", e)
				}
			}
		}
		if ev.Kind == graph.EventInterrupt {
			if ev.Namespace == "" {
				kinds = append(kinds, "interrupt")
			} else {
				kinds = append(kinds, "step-interrupt")
			}
		}
	}
	want := []string{"plan_ready", "step_started", "step-interrupt", "waiting", "interrupt"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// Parallel steps waiting for approval each have their own interrupt:
// answering one resumes only its step, and the other keeps waiting.
func TestParallelApprovals(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Post A"), st("b", "Post B")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"A"}`)), llmtest.Text("A is out"))
	m.When(inStep("b"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"B"}`)), llmtest.Text("B is out"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{publish(&c)}})
	opts := thread(checkpoint.NewMemory(), "two")
	res, err := g.Invoke(context.Background(), planexec.Input("go"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
		t.Fatalf("err = %v, %d interrupts; want 2", err, len(res.Interrupts))
	}
	byTool := map[string]string{}
	for _, in := range res.Interrupts {
		req, _ := tool.ApprovalFrom(in)
		byTool[string(req.Arguments)] = in.ID
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{byTool[`{"q":"A"}`]: tool.Approve()}))...)
	in := interrupted(t, res, err)
	if in.ID != byTool[`{"q":"B"}`] || c.get("publish:A") != 1 || c.get("publish:B") != 0 {
		t.Fatalf("still waiting for %s; publish A %d, B %d", in.ID, c.get("publish:A"), c.get("publish:B"))
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Reject("not B")))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("publish:A") != 1 || c.get("publish:B") != 0 {
		t.Errorf("publish ran A %d, B %d times; want 1 and 0", c.get("publish:A"), c.get("publish:B"))
	}
	if n := len(requestsFrom(m, inStep("a"))); n != 2 {
		t.Errorf("step a made %d requests; want 2", n)
	}
	want := map[string]planexec.StepStatus{"a": planexec.StepDone, "b": planexec.StepDone}
	if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
}
