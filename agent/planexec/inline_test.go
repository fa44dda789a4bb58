package planexec_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// stepAsk matches step id's model requests whether its loop made them
// (node "model" in the step's namespace) or its task did (node "step",
// Config.InlineSteps).
func stepAsk(id string) llmtest.Matcher {
	loop := inStep(id)
	return func(r *llmtest.Request) bool {
		if r.Node != planexec.StepNode {
			return loop(r)
		}
		return strings.Contains(r.LastUser(), "Your step is "+id+":")
	}
}

// inlineRun runs a 20-step plan of toolless steps on a saver that counts
// the calls in the steps' namespaces, streaming the agent's events.
func inlineRun(t *testing.T, inline bool, opts ...graph.RunOption) (*callSaver, graph.State, []string) {
	t.Helper()
	m := replies20(t)
	m.byNode[planexec.StepNode] = m.byNode[react.ModelNode]
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, InlineSteps: inline, TokenBudget: 1 << 20})
	s := newCallSaver()
	var events []string
	var state graph.State
	for ev, err := range g.Stream(context.Background(), planexec.Input("go"), append(append(thread(s, "inline"), graph.WithEvents(graph.EventCustom|graph.EventValues)), opts...)...) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := planexec.EventFrom(ev); ok {
			events = append(events, fmt.Sprintf("%s %s %q %q", e.Kind, e.StepID, e.Result, e.Error))
		}
		if ev.Kind == graph.EventValues && ev.Namespace == "" {
			state = ev.State
		}
	}
	slices.Sort(events) // parallel steps' events come in any order
	return s, state, events
}

// With Config.InlineSteps a toolless step is one model call in its task:
// nothing is read or written in the steps' namespaces, and the run's
// results, counts and events are those of the steps run as loops. (The
// stream takes no subgraph events: see TestInlineStepsRunLoopsForSubgraphEvents.)
func TestInlineStepsSaveNothingInTheirNamespaces(t *testing.T) {
	loop, loopState, loopEvents := inlineRun(t, false)
	in, inState, inEvents := inlineRun(t, true, graph.WithoutSubgraphEvents())
	if loop.batches+loop.puts == 0 {
		t.Fatal("the steps run as loops saved nothing in their namespaces; the comparison below means nothing")
	}
	got := map[string]int{"reads": in.gets, "puts": in.puts, "batches": in.batches, "pending writes": in.pending}
	if d := cmp.Diff(map[string]int{"reads": 0, "puts": 0, "batches": 0, "pending writes": 0}, got); d != "" {
		t.Errorf("saver calls in the inline steps' namespaces (-want +got):\n%s", d)
	}
	ns, err := in.Namespaces(context.Background(), "inline")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if strings.HasPrefix(n, planexec.StepNode+":") {
			t.Errorf("inline steps left namespace %s", n)
		}
	}
	if n := len(planexec.Steps.Get(inState)); n != 20 {
		t.Fatalf("%d steps finished inline; want 20", n)
	}
	if d := cmp.Diff(planexec.Steps.Get(loopState), planexec.Steps.Get(inState)); d != "" {
		t.Errorf("step results (-loop +inline):\n%s", d)
	}
	for _, k := range []*graph.Key[int]{planexec.Rounds, planexec.Tokens} {
		if a, b := k.Get(loopState), k.Get(inState); a != b || a == 0 {
			t.Errorf("%s: loops %d, inline %d; want the same, not 0", k.Name(), a, b)
		}
	}
	if d := cmp.Diff(loopEvents, inEvents); d != "" {
		t.Errorf("the agent's events (-loop +inline):\n%s", d)
	}
}

// An inline step sends the request its loop's first model turn sends.
func TestInlineStepSendsTheLoopsRequest(t *testing.T) {
	requests := func(inline bool) []llmtest.Request {
		m := executing(simplePlan(st("a", "Find")))
		m.When(stepAsk("a"), llmtest.Text("found"))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, System: "Be brief.", InlineSteps: inline})
		if _, err := g.Invoke(context.Background(), planexec.Input("go")); err != nil {
			t.Fatal(err)
		}
		return requestsFrom(m, stepAsk("a"))
	}
	loop, in := requests(false), requests(true)
	if len(loop) != 1 || len(in) != 1 {
		t.Fatalf("step requests: loop %d, inline %d; want 1 each", len(loop), len(in))
	}
	if in[0].Node != planexec.StepNode {
		t.Errorf("the inline step's request came from node %q; want %q (no nested run)", in[0].Node, planexec.StepNode)
	}
	if d := cmp.Diff(loop[0].Request, in[0].Request, cmpopts.IgnoreFields(llm.Message{}, "ID")); d != "" {
		t.Errorf("the step's request (-loop +inline):\n%s", d)
	}
}

// A toolless step whose model calls a tool anyway, with rounds left, runs
// its loop after all (which tells the model the tool does not exist and
// asks again); the inline request is counted in the step's requests.
func TestInlineStepRunsItsLoopWhenTheModelCallsATool(t *testing.T) {
	m := executing(simplePlan(st("a", "Find")))
	m.When(llmtest.Node(planexec.StepNode), llmtest.ToolCalls(llmtest.Call("ghost", `{}`)))
	m.When(inStep("a"), llmtest.Text("found without it"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, InlineSteps: true})
	s := newCallSaver()
	res, err := g.Invoke(context.Background(), planexec.Input("go"), thread(s, "ghost")...)
	if err != nil {
		t.Fatal(err)
	}
	r := planexec.Steps.Get(res.State)["a"]
	if r.Status != planexec.StepDone || r.Result != "found without it" || r.Requests != 2 {
		t.Errorf("step a = %+v; want done with the loop's answer and 2 requests", r)
	}
	if n := planexec.Rounds.Get(res.State); n != 5 {
		t.Errorf("Rounds = %d; want 5 (intent, plan, the step's 2, delivery)", n)
	}
	if s.batches+s.puts == 0 {
		t.Error("the step's loop saved nothing in its namespace")
	}
}

// A run that streams model tokens runs its toolless steps as loops: the
// tokens keep coming from the steps' namespaces, where clients look for
// them (a step's text is not the agent's answer).
func TestInlineStepsStreamingTokensRunLoops(t *testing.T) {
	m := executing(simplePlan(st("a", "Find")))
	m.When(stepAsk("a"), llmtest.Text("found"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, InlineSteps: true})
	var stepTokens int
	for ev, err := range g.Stream(context.Background(), planexec.Input("go"), graph.WithEvents(graph.EventMessages)) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Kind != graph.EventMessages:
		case ev.Node == planexec.StepNode:
			t.Errorf("the step task streamed %q itself; want its loop to (in the step's namespace)", ev.Message.Text)
		case ev.Node == react.ModelNode && strings.HasPrefix(ev.Namespace, planexec.StepNode+":"):
			stepTokens++
		}
	}
	if stepTokens == 0 {
		t.Error("no token of the step's reply streamed")
	}
}

// With Config.InlineSteps, steps that have tools still run their loops in
// their namespaces: an approval inside a step stops the run, and the
// resumed run finishes the step without running its lookup again or
// asking the model again for the approved call.
func TestInlineStepsWithToolsKeepTheirLoops(t *testing.T) {
	var c counter
	m := executing(simplePlan(st("a", "Draft"), st("b", "Check")))
	m.When(inStep("a"), llmtest.ToolCalls(llmtest.Call("publish", `{"q":"post"}`)), llmtest.Text("published"))
	m.When(inStep("b"), llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"facts"}`)), llmtest.Text("checked"))
	cfg := planexec.Config{Model: m, PlanMode: true, Tools: []tool.Tool{lookup(&c), publish(&c)}, InlineSteps: true}
	s := newCallSaver()
	opts := thread(s, "tools")
	res, err := mustNew(t, cfg).Invoke(context.Background(), planexec.Input("go"), opts...)
	if req, ok := tool.ApprovalFrom(interrupted(t, res, err)); !ok || req.Tool != "publish" {
		t.Fatalf("interrupt = %+v", req)
	}
	if s.batches+s.puts == 0 {
		t.Fatal("the steps with tools saved nothing in their namespaces")
	}
	res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("publish:post") != 1 || c.get("lookup:facts") != 1 {
		t.Errorf("publish ran %d times, lookup %d; want 1 and 1", c.get("publish:post"), c.get("lookup:facts"))
	}
	if a, b := len(requestsFrom(m, inStep("a"))), len(requestsFrom(m, inStep("b"))); a != 2 || b != 2 {
		t.Errorf("model requests: step a %d, step b %d; want 2 each", a, b)
	}
	if n := len(requestsFrom(m, llmtest.Node(planexec.StepNode))); n != 0 {
		t.Errorf("%d model requests from the step tasks themselves; want none (the steps have tools)", n)
	}
	want := map[string]planexec.StepStatus{"a": planexec.StepDone, "b": planexec.StepDone}
	if d := cmp.Diff(want, stepStatuses(res.State)); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
}

// The step budget's graceful finish applies to an inline step as to its
// loop: with one round, a reply that calls a tool anyway ends the step
// with the calls dropped and said so, after one request.
func TestInlineStepLastRoundDropsCalls(t *testing.T) {
	run := func(inline bool) planexec.StepResult {
		m := executing(simplePlan(st("a", "Find")))
		m.When(stepAsk("a"), llmtest.Text("partly").WithCalls(llmtest.Call("ghost", `{}`)))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, StepRounds: 1, InlineSteps: inline})
		res, err := g.Invoke(context.Background(), planexec.Input("go"))
		if err != nil {
			t.Fatal(err)
		}
		return planexec.Steps.Get(res.State)["a"]
	}
	loop, in := run(false), run(true)
	if !strings.Contains(loop.Result, "ghost") || loop.Requests != 1 {
		t.Fatalf("the loop's step = %+v; want its result to name the dropped call, after 1 request", loop)
	}
	if d := cmp.Diff(loop, in); d != "" {
		t.Errorf("step a (-loop +inline):\n%s", d)
	}
}

// The budgets bound an inline step as they bound its loop: a step still
// waiting for its model when the time budget passes fails by it (not
// done), the independent step finishes, and the next level never starts.
func TestInlineStepTimeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New()
		m.When(node(planexec.IntentNode), isTask)
		m.When(node(planexec.PlanNode), simplePlan(st("slow", "Crawl"), st("x", "Quick"), st("c", "Combine", "x")))
		m.When(stepAsk("slow"), llmtest.Text("too late").After(2*time.Minute))
		m.When(stepAsk("x"), llmtest.Text("quick result").After(10*time.Second))
		m.When(stepAsk("c"), llmtest.Text("never"))
		m.When(node(planexec.DeliverNode), llmtest.Text("Time ran out."))
		g := mustNew(t, planexec.Config{Model: m, PlanMode: true, TimeBudget: time.Minute, ContinueOnError: true, Logger: quiet, InlineSteps: true})
		res, err := g.Invoke(context.Background(), planexec.Input("Crawl and combine"))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(requestsFrom(m, inStep("slow"))) + len(requestsFrom(m, inStep("x"))); n != 0 {
			t.Fatalf("%d requests from the steps' loops; want the steps inline", n)
		}
		steps := planexec.Steps.Get(res.State)
		if r := steps["slow"]; r.Status != planexec.StepFailed || r.Budget != planexec.BudgetTime || !strings.Contains(r.Error, "time budget ran out") {
			t.Errorf("slow = %+v; want failed by the time budget", r)
		}
		if r := steps["x"]; r.Status != planexec.StepDone || r.Result != "quick result" {
			t.Errorf("x = %+v", r)
		}
		if _, ran := steps["c"]; ran {
			t.Error("c ran after the time budget passed")
		}
		if got := planexec.Stopped.Get(res.State); got != planexec.BudgetTime {
			t.Errorf("Stopped = %q", got)
		}
	})
}

// A stream that takes subgraph events would miss the steps' loops (their
// task, update and checkpoint events in step:<task>): with them asked
// for, Config.InlineSteps runs every step as its loop.
func TestInlineStepsRunLoopsForSubgraphEvents(t *testing.T) {
	s, state, _ := inlineRun(t, true)
	if s.batches+s.puts == 0 {
		t.Error("the steps saved nothing in their namespaces; with subgraph events streamed they must run as loops")
	}
	if n := len(planexec.Steps.Get(state)); n != 20 {
		t.Fatalf("%d steps finished; want 20", n)
	}
}
