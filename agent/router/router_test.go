package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// The router model picks a sub-agent; the sub-agent runs as a nested run
// whose events and model requests carry its own namespace.
func TestRouterCallsSubAgent(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(llmtest.Namespace("researcher:"),
		llmtest.ToolCalls(llmtest.Call("search", `{"text":"tides"}`)), // call_1
		llmtest.Text("Tides follow the moon."))
	m.Reply(
		llmtest.ToolCalls(llmtest.Call("researcher", `{"task":"Why are there tides?"}`)), // call_2
		llmtest.Text("Because of the moon."))
	g := mustNew(t, router.Config{
		Model:  m,
		System: "Route questions.",
		Agents: []router.Agent{{Name: "researcher", Description: "Finds facts.", Graph: reactAgent(t, m, echoTool(&r, "search", "found: "))}},
	})

	var final graph.State
	taskNS := map[string]map[string]bool{} // node -> namespaces its tasks ran in
	for ev, err := range g.Stream(context.Background(), react.Input("Why tides?"), graph.WithEvents(graph.EventValues|graph.EventTaskStart)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventValues:
			if ev.Namespace == "" {
				final = ev.State
			}
		case graph.EventTaskStart:
			if taskNS[ev.Node] == nil {
				taskNS[ev.Node] = map[string]bool{}
			}
			taskNS[ev.Node][ev.Namespace] = true
		}
	}

	// The sub-agent's tasks (its model and tool nodes) stream in one
	// namespace under the agent's node; the router's in the root.
	var subNS string
	for ns := range taskNS[react.ModelNode] {
		subNS = ns
	}
	if len(taskNS[react.ModelNode]) != 1 || !strings.HasPrefix(subNS, "researcher:") || strings.Contains(subNS, "|") {
		t.Fatalf("the sub-agent's model node ran in namespaces %v; want one under researcher:", taskNS[react.ModelNode])
	}
	if !taskNS[react.ToolsNode][subNS] || !taskNS[router.RouterNode][""] || !taskNS["researcher"][""] {
		t.Errorf("task namespaces: %v", taskNS)
	}
	// Its model requests are told apart by namespace.
	var sub int
	for _, req := range m.Requests() {
		if req.Namespace == subNS {
			sub++
		}
	}
	if router := routerRequests(m); sub != 2 || len(router) != 2 {
		t.Fatalf("%d sub-agent and %d router requests; want 2 and 2", sub, len(router))
	}
	if got := r.argsOf("search"); !cmp.Equal(got, []string{"tides"}) {
		t.Errorf("search ran with %v", got)
	}
	if got := toolResult(t, routerRequests(m)[1].Messages, "call_2"); got.Text() != "Tides follow the moon." || got.IsError {
		t.Errorf("the router model saw %+v", got)
	}
	o := finished(t, final)
	if o.Reason != router.ReasonAnswer || o.Answer != "Because of the moon." || o.Failed() {
		t.Errorf("outcome %+v", o)
	}
	rec, ok := tool.LookupCall(final, react.Calls, "call_2")
	if !ok || rec.Tool != "researcher" || rec.Result != "Tides follow the moon." {
		t.Errorf("record of the agent call: %+v, %v", rec, ok)
	}
	if _, ok := tool.LookupCall(final, react.Calls, "call_1"); ok {
		t.Error("the sub-agent's own call leaked into the router's records")
	}
}

// Two sub-agents called in one reply run in the same step, and their
// answers reach the model in call order.
func TestParallelSubAgents(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("researcher:"), llmtest.Text("The moon pulls the sea."))
	m.When(llmtest.Namespace("writer:"), llmtest.Text("A poem about tides."))
	m.Reply(
		llmtest.ToolCalls(
			llmtest.Call("researcher", `{"task":"facts on tides"}`), // call_1
			llmtest.Call("writer", `{"task":"a poem on tides"}`),    // call_2
		),
		llmtest.Text("Facts and a poem."))
	g := mustNew(t, router.Config{Model: m, Agents: []router.Agent{
		{Name: "researcher", Description: "Finds facts.", Graph: reactAgent(t, m)},
		{Name: "writer", Description: "Writes poems.", Graph: reactAgent(t, m)},
	}})
	res, err := g.Invoke(context.Background(), react.Input("Tides: facts and a poem."))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	for _, p := range res.Path {
		steps[p.Node] = p.Step
	}
	if steps["researcher"] == 0 || steps["researcher"] != steps["writer"] {
		t.Errorf("the agents ran in steps %v; want one step for both", steps)
	}
	sent := routerRequests(m)[1].Messages
	n := len(sent)
	if sent[n-2].ToolCallID != "call_1" || sent[n-2].Text() != "The moon pulls the sea." ||
		sent[n-1].ToolCallID != "call_2" || sent[n-1].Text() != "A poem about tides." {
		t.Errorf("results out of call order: %v", roles(sent))
	}
	for prefix, task := range map[string]string{"researcher:": "facts on tides", "writer:": "a poem on tides"} {
		var got []string
		for _, req := range m.Requests() {
			if strings.HasPrefix(req.Namespace, prefix) {
				got = append(got, req.LastUser())
			}
		}
		if !cmp.Equal(got, []string{task}) {
			t.Errorf("agent %s was asked %q; want %q", prefix, got, task)
		}
	}
	if o := finished(t, res.State); o.Answer != "Facts and a poem." {
		t.Errorf("outcome %+v", o)
	}
}

// A request naming an agent skips the router model; the agent's answer is
// the turn's answer, and the next turn goes to the router as usual.
func TestDirectRoute(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("researcher:"), llmtest.Text("The moon."))
	m.Reply(llmtest.Text("Glad to help."))
	g := mustNew(t, router.Config{Model: m, Agents: []router.Agent{{Name: "researcher", Description: "Finds facts.", Graph: reactAgent(t, m)}}})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("chat")}

	res, err := g.Invoke(context.Background(), react.Input("@researcher why are there tides?"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := routerRequests(m); len(reqs) != 0 {
		t.Fatalf("the router model was asked %d times; want 0", len(reqs))
	}
	if last := m.LastRequest(); last.LastUser() != "why are there tides?" {
		t.Errorf("the agent's task was %q", last.LastUser())
	}
	o := finished(t, res.State)
	if o.Reason != router.ReasonDirect || o.Answer != "The moon." || o.Tool != "researcher" {
		t.Errorf("outcome %+v", o)
	}
	msgs := react.Messages.Get(res.State)
	want := []string{"user:@researcher why are there tides?", "assistant>researcher", "tool(" + o.CallID + "):The moon.", "assistant:The moon."}
	if d := cmp.Diff(want, roles(msgs)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}

	res, err = g.Invoke(context.Background(), react.Input("thanks"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if o := finished(t, res.State); o.Reason != router.ReasonAnswer || o.Answer != "Glad to help." {
		t.Errorf("second turn's outcome %+v", o)
	}
	if reqs := routerRequests(m); len(reqs) != 1 || len(reqs[0].Messages) != len(want)+1 {
		t.Errorf("the router model's request holds %v", roles(m.LastRequest().Messages))
	}
}

// A mention of no agent, or with no task, goes to the router model; so
// does every request when direct routes are off.
func TestDirectRouteIgnored(t *testing.T) {
	for _, tc := range []struct {
		input string
		rule  router.DirectRoute
	}{
		{"@nobody hello", nil},
		{"@researcher", nil},
		{"@researcher why?", router.NoDirectRoutes},
	} {
		m := llmtest.New()
		m.Reply(llmtest.Text("Routed."))
		g := mustNew(t, router.Config{Model: m, DirectRoutes: tc.rule, Agents: []router.Agent{{Name: "researcher", Description: "Finds facts.", Graph: reactAgent(t, m)}}})
		res, err := g.Invoke(context.Background(), react.Input(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		if o := finished(t, res.State); o.Reason != router.ReasonAnswer || len(routerRequests(m)) != 1 {
			t.Errorf("%q: outcome %+v after %d router requests", tc.input, o, len(routerRequests(m)))
		}
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		in, agent, task string
		ok              bool
	}{
		{"@sql count the orders", "sql", "count the orders", true},
		{"  @sql\ncount the orders ", "sql", "count the orders", true},
		{"@sql", "", "", false},
		{"@ sql do it", "", "", false},
		{"please @sql do it", "", "", false},
	} {
		agent, task, ok := router.Mentions(tc.in)
		if agent != tc.agent || task != tc.task || ok != tc.ok {
			t.Errorf("Mentions(%q) = %q, %q, %v; want %q, %q, %v", tc.in, agent, task, ok, tc.agent, tc.task, tc.ok)
		}
	}
}

// A terminal tool's successful call ends the turn with its output; a
// failed call goes back to the model.
func TestTerminalTool(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("report", `{"wrong":1}`)),
		llmtest.ToolCalls(llmtest.Call("report", `{"text":"Q3 sales"}`), llmtest.Call("lookup", `{}`)),
		llmtest.Text("never asked"),
	)
	g := mustNew(t, router.Config{
		Model:    m,
		Tools:    []tool.Tool{echoTool(&r, "report", "REPORT: "), fixedTool(&r, "lookup", "42")},
		Terminal: []string{"report"},
	})
	res, err := g.Invoke(context.Background(), react.Input("Report on Q3."))
	if err != nil {
		t.Fatal(err)
	}
	o := finished(t, res.State)
	if o.Reason != router.ReasonTerminal || o.Answer != "REPORT: Q3 sales" || o.Tool != "report" || o.CallID != "call_2" {
		t.Errorf("outcome %+v", o)
	}
	if n := len(routerRequests(m)); n != 2 {
		t.Errorf("%d router requests; want 2 (the bad call went back to the model, the good one ended the turn)", n)
	}
	if r.get("lookup") != 1 {
		t.Error("the terminal call's sibling did not run")
	}
}

// The built-in stop tool ends the turn with its answer argument.
func TestStopTool(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call(tool.StopName, `{"answer":"42"}`)))
	g := mustNew(t, router.Config{Model: m, Tools: []tool.Tool{tool.Stop()}})
	res, err := g.Invoke(context.Background(), react.Input("The answer?"))
	if err != nil {
		t.Fatal(err)
	}
	if o := finished(t, res.State); o.Reason != router.ReasonTerminal || o.Answer != "42" {
		t.Errorf("outcome %+v", o)
	}
}

// A result matching an error pattern ends the turn with an error answer;
// the run itself completes.
func TestErrorPattern(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("count", `{}`), llmtest.Call("query", `{}`)),
		llmtest.Text("never asked"),
	)
	g := mustNew(t, router.Config{
		Model:         m,
		Tools:         []tool.Tool{fixedTool(&r, "count", "42 rows"), fixedTool(&r, "query", "ERROR: table orders does not exist")},
		ErrorPatterns: []string{`^ERROR:`, `(?i)permission denied`},
	})
	res, err := g.Invoke(context.Background(), react.Input("Orders?"))
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("err %v, status %s", err, res.Status)
	}
	o := finished(t, res.State)
	if !o.Failed() || o.Reason != router.ReasonError || o.Tool != "query" || o.CallID != "call_2" || o.Pattern != `^ERROR:` {
		t.Errorf("outcome %+v", o)
	}
	if !strings.Contains(o.Answer, "could not be completed") || !strings.Contains(o.Answer, "table orders does not exist") {
		t.Errorf("answer %q", o.Answer)
	}
	if n := len(routerRequests(m)); n != 1 {
		t.Errorf("%d router requests; want 1", n)
	}
}

// A sub-agent whose answer matches an error pattern, and a direct route
// whose agent fails, end the turn with an error answer.
func TestAgentErrors(t *testing.T) {
	t.Run("pattern", func(t *testing.T) {
		m := llmtest.New()
		m.When(llmtest.Namespace("sql:"), llmtest.Text("FAILED: no such column"))
		m.Reply(llmtest.ToolCalls(llmtest.Call("sql", `{"task":"count"}`)))
		g := mustNew(t, router.Config{Model: m, ErrorPatterns: []string{"^FAILED"},
			Agents: []router.Agent{{Name: "sql", Description: "Writes SQL.", Graph: reactAgent(t, m)}}})
		res, err := g.Invoke(context.Background(), react.Input("count"))
		if err != nil {
			t.Fatal(err)
		}
		if o := finished(t, res.State); !o.Failed() || o.Tool != "sql" || !strings.Contains(o.Answer, "no such column") {
			t.Errorf("outcome %+v", o)
		}
	})
	t.Run("direct", func(t *testing.T) {
		m := llmtest.New() // the agent's model has no reply: the nested run fails
		g := mustNew(t, router.Config{Model: m, Agents: []router.Agent{{Name: "sql", Description: "Writes SQL.", Graph: reactAgent(t, m)}}})
		res, err := g.Invoke(context.Background(), react.Input("@sql count"))
		if err != nil {
			t.Fatal(err)
		}
		o := finished(t, res.State)
		if !o.Failed() || o.Tool != "sql" || !strings.Contains(o.Answer, "no scripted reply") || len(routerRequests(m)) != 0 {
			t.Errorf("outcome %+v", o)
		}
	})
}

// ask_human stops the run with a question; the answer, given to this
// graph or to a fresh one on the same checkpointer, is the call's result.
func TestAskHuman(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		name := "same graph"
		if fresh {
			name = "fresh graph"
		}
		t.Run(name, func(t *testing.T) {
			m := llmtest.New().Reply(
				llmtest.ToolCalls(llmtest.Call(router.AskHumanName, `{"question":"Which city?"}`)),
				llmtest.Text("Booked Oslo."),
			)
			cfg := router.Config{Model: m, AskHuman: true}
			g := mustNew(t, cfg)
			opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("trip")}

			res, err := g.Invoke(context.Background(), react.Input("Book me a trip."), opts...)
			if !errors.Is(err, graph.ErrInterrupted) || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 {
				t.Fatalf("err %v, status %s, interrupts %v", err, res.Status, res.Interrupts)
			}
			q, ok := router.QuestionFrom(res.Interrupts[0])
			if want := (router.Question{Kind: router.QuestionKind, CallID: "call_1", Question: "Which city?"}); !ok || q != want {
				t.Fatalf("question %+v, %v", q, ok)
			}
			if _, ok := tool.ApprovalFrom(res.Interrupts[0]); ok {
				t.Error("the question reads as a tool approval")
			}
			if _, ok := router.Finished(res.State); ok {
				t.Error("an interrupted turn has an outcome")
			}

			if fresh {
				g = mustNew(t, cfg)
			}
			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("Oslo"))...)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolResult(t, m.LastRequest().Messages, "call_1"); got.Text() != "Oslo" || got.IsError {
				t.Errorf("the model saw %+v", got)
			}
			if o := finished(t, res.State); o.Answer != "Booked Oslo." {
				t.Errorf("outcome %+v", o)
			}
		})
	}
}

// A write tool inside a sub-agent stops the whole run for approval; a
// fresh graph on the same checkpointer resumes inside the sub-agent
// without running its finished steps again.
func TestSubAgentApprovalInFreshGraph(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(llmtest.Namespace("ops:"),
		llmtest.ToolCalls(llmtest.Call("check", `{}`)),                 // call_1
		llmtest.ToolCalls(llmtest.Call("restart", `{"text":"web-1"}`)), // call_2
		llmtest.Text("Restarted web-1."))
	m.Reply(
		llmtest.ToolCalls(llmtest.Call("ops", `{"task":"Restart web-1 if it is down."}`)), // call_3
		llmtest.Text("web-1 was restarted."))
	config := func() router.Config { // what a new process would build
		restart := tool.MustFunc("restart", "Restart a server.", func(_ context.Context, a textArgs) (string, error) {
			r.add("restart", a.Text)
			return "restarted " + a.Text, nil
		})
		ops := reactAgent(t, m, fixedTool(&r, "check", "web-1 is down"), restart)
		return router.Config{Model: m, Agents: []router.Agent{{Name: "ops", Description: "Operates servers.", Graph: ops}}}
	}
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("incident")}

	res, err := mustNew(t, config()).Invoke(context.Background(), react.Input("Is web-1 ok?"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %v", err, res.Interrupts)
	}
	in := res.Interrupts[0]
	req, ok := tool.ApprovalFrom(in)
	if !ok || req.Tool != "restart" || req.CallID != "call_2" || !strings.HasPrefix(in.Namespace, "ops:") {
		t.Fatalf("interrupt %+v (approval %+v)", in, req)
	}
	if r.get("check") != 1 || r.get("restart") != 0 || len(m.Requests()) != 3 {
		t.Fatalf("before the answer: check ran %d, restart %d, %d model requests", r.get("check"), r.get("restart"), len(m.Requests()))
	}

	res, err = mustNew(t, config()).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if r.get("check") != 1 || r.get("restart") != 1 {
		t.Errorf("after the answer: check ran %d times, restart %d; want 1 and 1", r.get("check"), r.get("restart"))
	}
	var sub int
	for _, q := range m.Requests() {
		if strings.HasPrefix(q.Namespace, "ops:") {
			sub++
		}
	}
	if sub != 3 || len(routerRequests(m)) != 2 {
		t.Errorf("%d sub-agent and %d router requests; want 3 and 2 (nothing asked twice)", sub, len(routerRequests(m)))
	}
	if o := finished(t, res.State); o.Answer != "web-1 was restarted." {
		t.Errorf("outcome %+v", o)
	}
	if rec, _ := tool.LookupCall(res.State, react.Calls, "call_3"); rec.Result != "Restarted web-1." {
		t.Errorf("record of the agent call: %+v", rec)
	}
	if m.Pending() != 0 {
		t.Errorf("%d scripted replies were never asked for", m.Pending())
	}
}

// Every configuration problem is reported at once.
func TestConfigErrors(t *testing.T) {
	m := llmtest.New()
	sub := reactAgent(t, m)
	var r ran
	_, err := router.New(router.Config{
		Agents: []router.Agent{
			{Description: "no name", Graph: sub},
			{Name: "router", Description: "taken", Graph: sub},
			{Name: "nograph", Description: "no graph"},
			{Name: "nodesc", Graph: sub},
			{Name: "bad name", Description: "spaces", Graph: sub},
			{Name: "lookup", Description: "same as a tool", Graph: sub},
		},
		Tools:         []tool.Tool{fixedTool(&r, "lookup", "x")},
		Terminal:      []string{"lookup", "missing"},
		ErrorPatterns: []string{"(", ""},
		Deadline:      -1,
		Policy:        tool.Policy{"ghost": tool.AutoApprove()},
		MaxParallel:   -2,
	})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{
		"Config.Model is nil",
		"Config.Agents[0] has no Name",
		`agent "router" has the name of one of the router's nodes`,
		`agent "nograph" has no Graph`,
		`agent "nodesc" has no Description`,
		`agent "bad name"`,
		`two tools are named "lookup"`,
		`Config.Terminal names "missing"`,
		"Config.ErrorPatterns[0]",
		"Config.ErrorPatterns[1] is empty",
		"Config.Deadline is -1ns",
		`the policy has a rule for "ghost"`,
		"MaxParallel is -2",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q:\n%v", want, err)
		}
	}
}

// The model sees every tool and agent, with the reference syntax in each
// description, and agents take a task.
func TestToolSpecs(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(llmtest.Text("hi"))
	g := mustNew(t, router.Config{Model: m, AskHuman: true, Tools: []tool.Tool{fixedTool(&r, "lookup", "x")},
		Agents: []router.Agent{{Name: "sql", Description: "Writes SQL.", Graph: reactAgent(t, m)}}})
	if _, err := g.Invoke(context.Background(), react.Input("hi")); err != nil {
		t.Fatal(err)
	}
	req := m.LastRequest()
	if got := req.ToolNames(); !cmp.Equal(got, []string{"lookup", "sql", router.AskHumanName}) {
		t.Errorf("tools offered: %v", got)
	}
	for _, s := range req.Tools {
		if !strings.Contains(s.Description, "{{call:ID}}") {
			t.Errorf("%s's description does not explain references: %q", s.Name, s.Description)
		}
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(req.Tools[1].Parameters, &schema); err != nil || !cmp.Equal(schema.Required, []string{"task"}) {
		t.Errorf("the agent's parameters: %s", req.Tools[1].Parameters)
	}
}

// Of two sub-agents called together, one finishes and one waits for an
// approval: the resumed run (in a fresh graph) runs only the waiting one.
func TestParallelSubAgentsOneInterrupts(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(llmtest.Namespace("researcher:"), llmtest.ToolCalls(llmtest.Call("search", `{"text":"load"}`)), llmtest.Text("Load is high.")) // call_1
	m.When(llmtest.Namespace("ops:"), llmtest.ToolCalls(llmtest.Call("restart", `{"text":"web-1"}`)), llmtest.Text("Restarted."))         // call_2
	m.Reply(llmtest.ToolCalls(
		llmtest.Call("researcher", `{"task":"Why is web-1 slow?"}`), // call_3
		llmtest.Call("ops", `{"task":"Restart web-1."}`),            // call_4
	), llmtest.Text("web-1 was overloaded and has been restarted."))
	config := func() router.Config {
		restart := tool.MustFunc("restart", "Restart a server.", func(_ context.Context, a textArgs) (string, error) {
			r.add("restart", a.Text)
			return "restarted " + a.Text, nil
		})
		return router.Config{Model: m, Agents: []router.Agent{
			{Name: "researcher", Description: "Finds causes.", Graph: reactAgent(t, m, echoTool(&r, "search", "found: "))},
			{Name: "ops", Description: "Operates servers.", Graph: reactAgent(t, m, restart)},
		}}
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("incident")}
	_, err := mustNew(t, config()).Invoke(context.Background(), react.Input("web-1 is slow"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("err %v; want an interrupt", err)
	}
	before := len(m.Requests())
	res, err := mustNew(t, config()).Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range m.Requests()[before:] {
		if strings.HasPrefix(q.Namespace, "researcher:") {
			t.Errorf("the finished researcher was asked again: %q", q.LastUser())
		}
	}
	if r.get("search") != 1 || r.get("restart") != 1 {
		t.Errorf("search ran %d times, restart %d; want 1 and 1", r.get("search"), r.get("restart"))
	}
	sent := routerRequests(m)[1].Messages
	if toolResult(t, sent, "call_3").Text() != "Load is high." || toolResult(t, sent, "call_4").Text() != "Restarted." {
		t.Errorf("the router model saw %v", roles(sent))
	}
	if o := finished(t, res.State); o.Answer != "web-1 was overloaded and has been restarted." {
		t.Errorf("outcome %+v", o)
	}
}

// The policy may put an agent under approval: the run stops before the
// agent starts, and a rejection reaches the model.
func TestPolicyOnAgent(t *testing.T) {
	m := llmtest.New()
	m.Reply(llmtest.ToolCalls(llmtest.Call("ops", `{"task":"Restart everything."}`)), llmtest.Text("Not done: a person said no."))
	g := mustNew(t, router.Config{Model: m, Policy: tool.Policy{"ops": tool.RequireApproval()},
		Agents: []router.Agent{{Name: "ops", Description: "Operates servers.", Graph: reactAgent(t, m)}}})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	res, err := g.Invoke(context.Background(), react.Input("Restart everything."), opts...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if req, ok := tool.ApprovalFrom(res.Interrupts[0]); !ok || req.Tool != "ops" || res.Interrupts[0].Namespace != "" {
		t.Fatalf("interrupt %+v", res.Interrupts[0])
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(tool.Reject("too risky")))...)
	if err != nil {
		t.Fatal(err)
	}
	if o := finished(t, res.State); o.Answer != "Not done: a person said no." {
		t.Errorf("outcome %+v", o)
	}
	if got := toolResult(t, m.LastRequest().Messages, "call_1"); !got.IsError || !strings.Contains(got.Text(), "too risky") {
		t.Errorf("the model saw %q", got.Text())
	}
	if len(m.Requests()) != 2 {
		t.Errorf("%d requests; the agent must not have run", len(m.Requests()))
	}
}

// When the step budget leaves no room for another round, the model is
// asked for its final answer with tool use off; calls it makes anyway are
// dropped with a note, and the run still ends with an answer.
func TestStepBudget(t *testing.T) {
	var r ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("lookup", `{}`)),
		llmtest.ToolCalls(llmtest.Call("lookup", `{}`)).WithText("So far: 42."),
	)
	g := mustNew(t, router.Config{Model: m, Tools: []tool.Tool{fixedTool(&r, "lookup", "42")}})
	// entry, router, tools, router: the second router step is the last.
	res, err := g.Invoke(context.Background(), react.Input("Look it up."), graph.WithStepLimit(4))
	if err != nil {
		t.Fatal(err)
	}
	last := m.LastRequest()
	if last.ToolChoice.Mode != llm.ToolChoiceNone || last.LastUser() != router.DefaultBudgetPrompt || len(last.Tools) != 1 {
		t.Errorf("the last request: tool choice %+v, last user %q, %d tools", last.ToolChoice, last.LastUser(), len(last.Tools))
	}
	o := finished(t, res.State)
	if o.Reason != router.ReasonAnswer || o.Answer != "So far: 42.\n\n[The step budget ran out, so these calls were not run: lookup.]" {
		t.Errorf("outcome %+v", o)
	}
	if r.get("lookup") != 1 {
		t.Errorf("lookup ran %d times", r.get("lookup"))
	}
}

// An answer that is not a string reaches the model as JSON.
func TestAskHumanStructuredAnswer(t *testing.T) {
	m := llmtest.New().Reply(llmtest.ToolCalls(llmtest.Call(router.AskHumanName, `{"question":"Dates?"}`)), llmtest.Text("ok"))
	g := mustNew(t, router.Config{Model: m, AskHuman: true})
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	if _, err := g.Invoke(context.Background(), react.Input("Plan."), opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(map[string]string{"from": "Mon"}))...); err != nil {
		t.Fatal(err)
	}
	if got := toolResult(t, m.LastRequest().Messages, "call_1").Text(); got != `{"from":"Mon"}` {
		t.Errorf("the model saw %q", got)
	}
}
