package builder_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

func TestLinearTwoNodes(t *testing.T) {
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Your order ships Monday."))
	m.When(inNode("review"), llmtest.Text("Reviewed: correct."))
	a := mustBuild(t, builder.New("support").
		Description("Answers, then reviews.").
		LLMNode("chat", "You are a support agent.").
		LLMNode("review", "You review answers.").
		Edge("chat", "review").
		Entry("chat").
		End("review"), m)

	res, err := a.Run(context.Background(), builder.Input("When does my order ship?"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Status != graph.StatusCompleted || res.LimitReached || res.Err != nil {
		t.Errorf("success %v, status %v, limit %v, err %v", res.Success, res.Status, res.LimitReached, res.Err)
	}
	if d := cmp.Diff([]string{"chat", "review"}, res.Path); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
	if res.Iterations != 2 || res.FinalMessage != "Reviewed: correct." {
		t.Errorf("iterations %d, final message %q", res.Iterations, res.FinalMessage)
	}
	want := []string{"user:When does my order ship?", "assistant:Your order ships Monday.", "assistant:Reviewed: correct."}
	if d := cmp.Diff(want, texts(react.Messages.Get(res.FinalState))); d != "" {
		t.Errorf("conversation (-want +got):\n%s", d)
	}
	// Each node sends its own prompt and the shared conversation; no
	// judge is asked, since there is no condition.
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	if reqs[0].System() != "You are a support agent." || reqs[1].System() != "You review answers." {
		t.Errorf("system prompts %q, %q", reqs[0].System(), reqs[1].System())
	}
	if n := len(reqs[1].Messages); n != 3 {
		t.Errorf("the reviewer saw %d messages; want 3 (system, user, chat's answer)", n)
	}
	var nodes []string
	for _, n := range res.Graph.Path {
		nodes = append(nodes, n.Node)
	}
	if d := cmp.Diff([]string{"chat", "chat/route", "review", "review/route"}, nodes); d != "" {
		t.Errorf("graph path (-want +got):\n%s", d)
	}
	if a.Name() != "support" || a.Description() != "Answers, then reviews." || a.Graph().Name() != "support" {
		t.Errorf("name %q, description %q, graph %q", a.Name(), a.Description(), a.Graph().Name())
	}
}

// A condition that holds loops back; when it no longer holds, the
// unconditional edge (here, the end) is taken.
func TestConditionLoopsBackThenDefault(t *testing.T) {
	const changes = "the reviewer asked for changes"
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Draft one."), llmtest.Text("Draft two."))
	m.When(inNode("review"), llmtest.Text("Too vague: name the day."), llmtest.Text("Good."))
	m.When(asked(changes), verdict(true), verdict(false))
	a := mustBuild(t, builder.New("support").
		LLMNode("chat", "Write.").
		LLMNode("review", "Review.").
		Edge("chat", "review").
		When("review", changes, "chat").
		End("review").
		Entry("chat"), m)

	res, err := a.Run(context.Background(), builder.Input("When?"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"chat", "review", "chat", "review"}, res.Path); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
	if !res.Success || res.FinalMessage != "Good." || res.Iterations != 4 {
		t.Errorf("success %v, final %q, iterations %d", res.Success, res.FinalMessage, res.Iterations)
	}
	var holds []bool
	for _, j := range res.Judgements {
		if j.Node != "review" || j.Condition != changes || j.To != "chat" || j.Reason == "" {
			t.Errorf("judgement %+v", j)
		}
		holds = append(holds, j.Holds)
	}
	if d := cmp.Diff([]bool{true, false}, holds); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
	// The judge is asked from the route node, with the conversation so far
	// as text and the condition last.
	var judge []llmtest.Request
	for _, r := range m.Requests() {
		if asked(changes)(&r) {
			judge = append(judge, r)
		}
	}
	if len(judge) != 2 {
		t.Fatalf("the judge was asked %d times; want 2", len(judge))
	}
	first := judge[0]
	if first.Node != builder.RouteNode("review") || first.Namespace != "" {
		t.Errorf("judge request from node %q namespace %q", first.Node, first.Namespace)
	}
	if u := first.LastUser(); !strings.Contains(u, "Assistant: Too vague: name the day.") || strings.Contains(u, "Good.") {
		t.Errorf("the first judgement saw:\n%s", u)
	}
	if first.System() != builder.DefaultJudgePrompt || first.ResponseFormat == nil {
		t.Errorf("judge system %q, response format %v", first.System(), first.ResponseFormat)
	}
	if m.Pending() != 0 {
		t.Errorf("%d scripted replies were not asked for", m.Pending())
	}
}

// Conditions are judged in declared order, only until one holds; with
// none holding, the unconditional edge is taken.
func TestConditionsInDeclaredOrder(t *testing.T) {
	const billing, bug = "the question is about billing", "the user reports a bug"
	build := func(m llm.Model, judge *llmtest.Model) *builder.Agent {
		b := builder.New("triage").
			LLMNode("triage", "Sort the question.").
			LLMNode("billing", "Billing.").
			LLMNode("tech", "Tech support.").
			LLMNode("general", "General.").
			When("triage", billing, "billing").
			When("triage", bug, "tech").
			Edge("triage", "general").
			Entry("triage")
		if judge != nil {
			b.Judge(judge)
		}
		return mustBuild(t, b, m)
	}
	for _, tc := range []struct {
		name     string
		verdicts map[string][]bool // condition -> scripted verdicts
		want     string
		asked    []string // conditions asked about, in order
	}{
		{"first holds", map[string][]bool{billing: {true}}, "billing", []string{billing}},
		{"second holds", map[string][]bool{billing: {false}, bug: {true}}, "tech", []string{billing, bug}},
		{"none holds", map[string][]bool{billing: {false}, bug: {false}}, "general", []string{billing, bug}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.New()
			for _, n := range []string{"triage", "billing", "tech", "general"} {
				m.When(inNode(n), llmtest.Text("from "+n))
			}
			judge := llmtest.New(llmtest.WithName("llmtest:judge"))
			for cond, vs := range tc.verdicts {
				for _, v := range vs {
					judge.When(asked(cond), verdict(v))
				}
			}
			res, err := build(m, judge).Run(context.Background(), builder.Input("My card was charged twice."))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"triage", tc.want}, res.Path); d != "" {
				t.Errorf("path (-want +got):\n%s", d)
			}
			var got []string
			for _, r := range judge.Requests() {
				_, cond, _ := strings.Cut(r.LastUser(), "Condition: ")
				cond, _, _ = strings.Cut(cond, "\n")
				got = append(got, cond)
			}
			if d := cmp.Diff(tc.asked, got); d != "" {
				t.Errorf("conditions asked about (-want +got):\n%s", d)
			}
			if len(res.Judgements) != len(tc.asked) {
				t.Errorf("%d judgements recorded; want %d", len(res.Judgements), len(tc.asked))
			}
			// The separate judge took every judgement: the nodes' model
			// was asked only by the nodes.
			if n := countMatching(m.Requests(), llmtest.LastUserContains("Condition: ")); n != 0 {
				t.Errorf("the nodes' model was asked to judge %d times", n)
			}
		})
	}
}

func TestNoEdgeEnds(t *testing.T) {
	m := llmtest.New().Reply(llmtest.Text("Hello!"))
	a := mustBuild(t, builder.New("hello").LLMNode("chat", "Greet.").Entry("chat"), m)
	res, err := a.Run(context.Background(), builder.Input("Hi"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"chat"}, res.Path); d != "" || !res.Success || res.FinalMessage != "Hello!" {
		t.Errorf("path %v, success %v, final %q", res.Path, res.Success, res.FinalMessage)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d requests; want 1 (no judge without conditions)", n)
	}
}

// A condition can lead to the end; when none holds the node's default
// edge is taken.
func TestConditionToEnd(t *testing.T) {
	const bye = "the user said goodbye"
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Bye!"))
	m.When(asked(bye), verdict(true))
	a := mustBuild(t, builder.New("chat").
		LLMNode("chat", "Chat.").
		LLMNode("survey", "Ask for feedback.").
		When("chat", bye, graph.END).
		Edge("chat", "survey").
		Entry("chat"), m)
	res, err := a.Run(context.Background(), builder.Input("Goodbye"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"chat"}, res.Path); d != "" || !res.Success {
		t.Errorf("path %v, success %v", res.Path, res.Success)
	}
}

// Tools run inside the node's visit: a model step, a tool step and the
// model again, all one iteration.
func TestToolUseInsideNode(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(inNode("chat"),
		llmtest.ToolCalls(llmtest.Call("lookup", `{"order":"A1"}`), llmtest.Call("lookup", `{"order":"B2"}`)),
		llmtest.Text("A1 and B2 have shipped."))
	a := mustBuild(t, builder.New("orders").LLMNode("chat", "Help with orders.", lookup(&r)).Entry("chat"), m)

	run := a.Start(context.Background(), builder.Input("Where are A1 and B2?"))
	res, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if r.get("lookup:A1") != 1 || r.get("lookup:B2") != 1 {
		t.Errorf("tool runs: %v", r.n)
	}
	if res.Iterations != 1 || res.FinalMessage != "A1 and B2 have shipped." || !res.Success {
		t.Errorf("iterations %d, final %q, success %v", res.Iterations, res.FinalMessage, res.Success)
	}
	if got := m.Requests()[0].ToolNames(); len(got) != 1 || got[0] != "lookup" {
		t.Errorf("tools offered: %v", got)
	}
	want := []string{"user:Where are A1 and B2?", "assistant>lookup", "tool:order A1 shipped", "tool:order B2 shipped", "assistant:A1 and B2 have shipped."}
	if d := cmp.Diff(want, texts(react.Messages.Get(res.FinalState))); d != "" {
		t.Errorf("conversation (-want +got):\n%s", d)
	}
	recs := builder.ToolCalls(res.FinalState)
	if len(recs) != 2 {
		t.Fatalf("%d tool records; want 2", len(recs))
	}
	if d := cmp.Diff(recs, run.ToolCalls()); d != "" {
		t.Errorf("the handle's records differ from the final state's (-state +handle):\n%s", d)
	}
	for i, order := range []string{"A1", "B2"} {
		rec := recs[i]
		if rec.Tool != "lookup" || rec.Arguments != `{"order":"`+order+`"}` || rec.Result != "order "+order+" shipped" || rec.Error != "" {
			t.Errorf("record %d: %+v", i, rec)
		}
	}
}

func TestLLMNodeWithOwnModelAndOutput(t *testing.T) {
	type Summary struct {
		Topic string `json:"topic"`
	}
	summary := graph.NewKey[Summary]("summary")
	main := llmtest.New()
	main.When(inNode("chat"), llmtest.Text("Shipping is free."))
	own := llmtest.New(llmtest.WithName("llmtest:own"))
	own.When(llmtest.Node(react.ModelNode), llmtest.Text("Summary: shipping."))
	own.When(llmtest.Node(react.AnswerNode), llmtest.JSON(Summary{Topic: "shipping"}))
	a := mustBuild(t, builder.New("s").
		LLMNode("chat", "Chat.").
		LLMNodeWith("summarize", react.Config{Model: own, System: "Summarize.", Output: react.OutputTo(summary)}).
		Edge("chat", "summarize").
		Entry("chat"), main)
	res, err := a.Run(context.Background(), builder.Input("Is shipping free?"))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary.Get(res.FinalState); got.Topic != "shipping" {
		t.Errorf("summary = %+v", got)
	}
	if len(main.Requests()) != 1 || len(own.Requests()) != 2 {
		t.Errorf("main model asked %d times, own model %d", len(main.Requests()), len(own.Requests()))
	}
}

func TestBuildErrorsListedAtOnce(t *testing.T) {
	var r ran
	b := builder.New("").
		MaxIterations(0).
		Timeout(-1).
		LLMNode("chat", "Chat.").
		LLMNode("chat", "Chat again.").
		LLMNode("review", "Review.", lookup(&r), lookup(&r)).
		LLMNode("orphan", "Nobody calls me.").
		LLMNodeWith("own", react.Config{Messages: llm.NewMessagesKey("other")}).
		Edge("chat", "reveiw").
		Edge("ghost", "chat").
		Edge("review", "chat").
		Edge("review", graph.END).
		When("nowhere", "it rains", "chat").
		When("chat", "", "review").
		When("chat", "the user is angry", "review").
		When("chat", "the user is angry", "own")
	_, err := b.Build(nil)
	var be *builder.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build returned %v; want a *BuildError", err)
	}
	for _, want := range []string{
		"name is empty",
		"MaxIterations(0)",
		"Timeout(-1ns) is negative",
		`"chat" is added twice`,
		`"review": tool node: two tools are named "lookup"`,
		"Config.Messages is set",
		`goes to "reveiw", which is not an LLM node (nodes: chat, review, orphan, own)`,
		`an edge leaves "ghost"`,
		`"review" has two unconditional edges`,
		`is on "nowhere"`,
		"empty condition",
		`the condition "the user is angry" twice`,
		"no entry node",
		"has no model",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if len(be.Problems) < 14 {
		t.Errorf("%d problems:\n%v", len(be.Problems), err)
	}

	// The checks that need an entry.
	_, err = builder.New("x").
		LLMNode("a", "A.").
		LLMNode("b", "B.").
		LLMNode("c", "C.").
		LLMNode("lost", "L.").
		Edge("a", "b").
		Edge("b", "c").
		Edge("c", "b").
		Entry("a").
		Entry("b").
		Build(llmtest.New())
	for _, want := range []string{
		`Entry is set twice ("a", then "b")`,
		`"lost" cannot be reached from the entry "a"`,
		"the nodes b → c → b form a loop of unconditional edges",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}

	_, err = builder.New("x").LLMNode("a", "A.").When("a", "it is done", graph.END).Entry("unknown").Build(nil)
	for _, want := range []string{`the entry "unknown" is not an LLM node`, "no judge model"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}

	// A loop with a condition on it can end, so it builds.
	if _, err := builder.New("x").LLMNode("a", "A.").LLMNode("b", "B.").
		Edge("a", "b").When("b", "more is needed", "a").Entry("a").Build(llmtest.New()); err != nil {
		t.Errorf("a loop with a condition: %v", err)
	}
}

func TestMermaidShowsConditions(t *testing.T) {
	a := mustBuild(t, builder.New("support").
		LLMNode("chat", "Chat.").
		LLMNode("review", "Review.").
		Edge("chat", "review").
		When("review", "changes are needed", "chat").
		End("review").
		Entry("chat"), llmtest.New())
	mm := a.Graph().Mermaid()
	for _, want := range []string{`review_2f_route -->|"changes are needed"| chat`, `subgraph chat["chat"]`} {
		if !strings.Contains(mm, want) {
			t.Errorf("Mermaid lacks %q:\n%s", want, mm)
		}
	}
}

// The judge reads the conversation as text, tool calls and results
// included, under the prompt JudgePrompt sets.
func TestJudgeSeesTheConversation(t *testing.T) {
	const shipped = "the order has shipped"
	var r ran
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.ToolCalls(llmtest.Call("lookup", `{"order":"A1"}`)), llmtest.Text("It shipped."))
	m.When(asked(shipped), verdict(true))
	a := mustBuild(t, builder.New("orders").
		JudgePrompt("Decide strictly.").
		LLMNode("chat", "Help.", lookup(&r)).
		LLMNode("chase", "Chase the warehouse.").
		When("chat", shipped, graph.END).
		Edge("chat", "chase").
		Entry("chat"), m)
	res, err := a.Run(context.Background(), builder.Input("Where is A1?"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"chat"}, res.Path); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
	judge := m.LastRequest()
	want := "Conversation:\n\nUser: Where is A1?\n\nAssistant called tool lookup with {\"order\":\"A1\"}\n\n" +
		"Tool lookup returned: order A1 shipped\n\nAssistant: It shipped.\n\nCondition: " + shipped
	if !strings.HasPrefix(judge.LastUser(), want) || judge.System() != "Decide strictly." {
		t.Errorf("judge request: system %q, user:\n%s", judge.System(), judge.LastUser())
	}
}

// A node's own tool-subset key is part of the agent's state, so a run's
// input chooses that node's tools; other nodes offer all of theirs.
func TestToolSubsetOfOneNode(t *testing.T) {
	var r ran
	subset := graph.NewKey[[]string]("chat_tools")
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Looked."))
	m.When(inNode("admin"), llmtest.Text("Done."))
	a := mustBuild(t, builder.New("orders").
		LLMNodeWith("chat", react.Config{System: "Help.", Tools: []tool.Tool{lookup(&r), refund(&r)}, ToolSubset: subset}).
		LLMNode("admin", "Admin.", lookup(&r), refund(&r)).
		Edge("chat", "admin").
		Entry("chat"), m)
	input := append(builder.Input("A1?"), subset.Set([]string{"lookup"}))
	if _, err := a.Run(context.Background(), input); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if d := cmp.Diff([]string{"lookup"}, reqs[0].ToolNames()); d != "" {
		t.Errorf("chat's tools (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"lookup", "refund"}, reqs[1].ToolNames()); d != "" {
		t.Errorf("admin's tools (-want +got):\n%s", d)
	}
}

func TestMoreBuildErrors(t *testing.T) {
	_, err := builder.New("x").
		Judge(nil).
		JudgePrompt(" ").
		LLMNode("", "Empty.").
		LLMNode(graph.END, "Reserved.").
		LLMNodeWith("own", react.Config{Calls: tool.NewRecordsKey("other")}).
		LLMNode("own/route", "Collides.").
		Entry("own").
		Build(llmtest.New())
	for _, want := range []string{
		"Judge was given a nil model",
		"JudgePrompt was given an empty prompt",
		"an LLM node has an empty name",
		`"__end__" is reserved`,
		"Config.Calls is set",
		`"own/route" has the name of node "own"'s route node`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	var be *builder.BuildError
	if !errors.As(err, &be) || len(be.Unwrap()) != len(be.Problems) {
		t.Errorf("not a *BuildError: %v", err)
	}
}

// Run options the graph rejects fail the run before it starts.
func TestBadRunOptions(t *testing.T) {
	a := mustBuild(t, builder.New("x").LLMNode("chat", "Chat.").Entry("chat"), llmtest.New())
	run := a.Start(context.Background(), builder.Input("Hi"), graph.WithThread("no saver"))
	res, err := run.Wait()
	if err == nil || res.Graph != nil || res.Status != graph.StatusFailed || run.Status() != graph.StatusFailed || res.Success {
		t.Errorf("err %v, graph result %v, status %v", err, res.Graph, res.Status)
	}
	if run.ToolCalls() != nil || run.Iterations() != 0 {
		t.Errorf("tool calls %v, iterations %d", run.ToolCalls(), run.Iterations())
	}
}
