package planexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// Chat is answered by the intent check itself: no planning, no steps.
func TestChatIntent(t *testing.T) {
	m := llmtest.New().Reply(llmtest.JSON(map[string]string{"intent": "chat", "reply": "Hello! How can I help?"}))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
	res, err := g.Invoke(context.Background(), planexec.Input("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, res); got != "Hello! How can I help?" {
		t.Errorf("answer = %q", got)
	}
	msgs := planexec.Messages.Get(res.State)
	if len(msgs) != 2 || msgs[1].Role != llm.RoleAssistant || msgs[1].Text() != "Hello! How can I help?" {
		t.Errorf("history = %+v", msgs)
	}
	if n := len(m.Requests()); n != 1 || planexec.Rounds.Get(res.State) != 1 {
		t.Errorf("%d requests, %d rounds counted; want 1 and 1", n, planexec.Rounds.Get(res.State))
	}
}

// An intent reply that never decodes is taken as a task (when unsure, a
// task), as is chat without a reply.
func TestUnclearIntentIsTask(t *testing.T) {
	for name, intent := range map[string][]llmtest.Turn{
		"bad json":      {llmtest.Text("chat?"), llmtest.Text("chat!"), llmtest.Text("chat.")},
		"chat no reply": {llmtest.JSON(map[string]string{"intent": "chat"})},
	} {
		t.Run(name, func(t *testing.T) {
			m := llmtest.New()
			m.When(node(planexec.IntentNode), intent...)
			m.When(node(planexec.DirectPrefix+react.ModelNode), llmtest.Text("Did it."))
			g := mustNew(t, planexec.Config{Model: m, Logger: quiet})
			res, err := g.Invoke(context.Background(), planexec.Input("do it"))
			if err != nil {
				t.Fatal(err)
			}
			if got := answer(t, res); got != "Did it." {
				t.Errorf("answer = %q", got)
			}
		})
	}
}

// With plan mode off a task runs as one ReAct loop over the tools, in the
// conversation's history.
func TestTaskWithoutPlan(t *testing.T) {
	var c counter
	m := llmtest.New().Reply(
		isTask,
		llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"tides"}`)),
		llmtest.Text("High tide at noon."),
	)
	g := mustNew(t, planexec.Config{Model: m, Tools: []tool.Tool{lookup(&c)}})
	var kinds []planexec.EventKind
	var final graph.State
	for ev, err := range g.Stream(context.Background(), planexec.Input("When is high tide?"), graph.WithEvents(graph.EventCustom|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventValues {
			final = ev.State
		}
		if e, ok := planexec.EventFrom(ev); ok {
			kinds = append(kinds, e.Kind)
		}
	}
	if got, _ := planexec.Answer(final); got != "High tide at noon." {
		t.Errorf("answer = %q", got)
	}
	if c.get("lookup:tides") != 1 {
		t.Errorf("lookup ran %d times", c.get("lookup:tides"))
	}
	want := []planexec.EventKind{planexec.EventToolCall, planexec.EventToolResult, planexec.EventDelivered}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if n := len(planexec.Messages.Get(final)); n != 4 {
		t.Errorf("history has %d messages; want user, call, result, answer", n)
	}
}

func TestConfigErrors(t *testing.T) {
	var c counter
	_, err := planexec.New(planexec.Config{
		ConfirmPlan: true,
		MaxAsks:     -1,
		RoundBudget: -2,
		Tools:       []tool.Tool{lookup(&c), nil},
		Packs:       map[string][]tool.Tool{"dup": {lookup(&c)}, "empty": nil},
		ActivePacks: []string{"nope"},
	})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{
		"Model is nil", "ConfirmPlan is set but PlanMode is not", "MaxAsks is -1", "RoundBudget is -2",
		"nil tool", `named "lookup"`, `pack "empty" has no tools`, `ActivePacks names "nope"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	// A policy rule for a tool the agent lacks is the loop's problem,
	// reported as well.
	_, err = planexec.New(planexec.Config{Model: llmtest.New(), Policy: tool.Policy{"ghost": tool.AutoApprove()}})
	if err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("err = %v; want the unknown policy rule named", err)
	}
}

// The final answer falls back to a mechanical summary when the model
// cannot write it.
func TestDeliverFallback(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask)
	m.When(node(planexec.PlanNode), simplePlan(st("a", "Find"), st("b", "Write", "a")))
	m.When(inStep("a"), llmtest.Text("found three"))
	m.When(inStep("b"), llmtest.Text("wrote it"))
	m.When(node(planexec.DeliverNode), llmtest.StatusError(500, "down"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
	res, err := g.Invoke(context.Background(), planexec.Input("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := "Task: the task\n- [done] a: Find — found three\n- [done] b: Write — wrote it"
	if got := answer(t, res); got != want {
		t.Errorf("answer = %q; want %q", got, want)
	}
	if lastText(planexec.Messages.Get(res.State)) != want {
		t.Error("the summary is not the history's last message")
	}
}

// A planexec added to a larger graph is nested: it never stops for plan
// confirmation, and neither does one marked Nested.
func TestNestedSkipsConfirmation(t *testing.T) {
	script := func() *llmtest.Model {
		m := llmtest.New()
		m.When(node(planexec.IntentNode), isTask)
		m.When(node(planexec.PlanNode), simplePlan(st("a", "Find")))
		m.When(inStep("a"), llmtest.Text("found"))
		m.When(node(planexec.DeliverNode), llmtest.Text("All done."))
		return m
	}
	t.Run("subgraph", func(t *testing.T) {
		inner := mustNew(t, planexec.Config{Model: script(), PlanMode: true, ConfirmPlan: true})
		b := graph.New(planexec.Messages, planexec.Summary)
		b.AddSubgraph("helper", inner)
		b.SetEntry("helper")
		b.AddEdge("helper", graph.END)
		outer, err := b.Compile()
		if err != nil {
			t.Fatal(err)
		}
		res, err := outer.Invoke(context.Background(), planexec.Input("go"), thread(checkpoint.NewMemory(), "nested")...)
		if err != nil {
			t.Fatalf("the nested agent stopped: %v", err)
		}
		if got := answer(t, res); got != "All done." {
			t.Errorf("answer = %q", got)
		}
	})
	t.Run("option", func(t *testing.T) {
		g := mustNew(t, planexec.Config{Model: script(), PlanMode: true, ConfirmPlan: true, Nested: true})
		res, err := g.Invoke(context.Background(), planexec.Input("go"), thread(checkpoint.NewMemory(), "opt")...)
		if err != nil || answer(t, res) != "All done." {
			t.Fatalf("err = %v", err)
		}
	})
}

// A thread's next input starts a new task: the previous plan and results
// are cleared, the conversation is kept.
func TestNextTurnStartsOver(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), isTask, llmtest.JSON(map[string]string{"intent": "chat", "reply": "You're welcome."}))
	m.When(node(planexec.PlanNode), simplePlan(st("a", "Find")))
	m.When(inStep("a"), llmtest.Text("found"))
	m.When(node(planexec.DeliverNode), llmtest.Text("Found it."))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
	opts := thread(checkpoint.NewMemory(), "turns")
	if _, err := g.Invoke(context.Background(), planexec.Input("find it"), opts...); err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), planexec.Input("thanks"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(planexec.CurrentPlan.Get(res.State).Steps) != 0 || len(planexec.Steps.Get(res.State)) != 0 {
		t.Error("the previous task's plan or results survived the next input")
	}
	var texts []string
	for _, msg := range planexec.Messages.Get(res.State) {
		texts = append(texts, string(msg.Role)+":"+msg.Text())
	}
	want := []string{"user:find it", "assistant:Found it.", "user:thanks", "assistant:You're welcome."}
	if d := cmp.Diff(want, texts); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	// The intent check of the second turn saw the first.
	if got := requestsFrom(m, node(planexec.IntentNode))[1].Messages; len(got) != 4 {
		t.Errorf("the second intent request has %d messages; want system and 3 of history", len(got))
	}
}

func TestModelErrorFailsPlanning(t *testing.T) {
	m := llmtest.New().Reply(isTask, llmtest.StatusError(401, "bad key"))
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, Logger: quiet})
	_, err := g.Invoke(context.Background(), planexec.Input("go"))
	if apiErr, ok := errors.AsType[*llm.APIError](err); !ok || apiErr.StatusCode != 401 || !strings.Contains(err.Error(), "planning failed") {
		t.Errorf("err = %v; want the API error, saying planning failed", err)
	}
}

// A task run without a plan may ask too; its question is announced as a
// waiting event and the answer reaches the loop.
func TestAskWithoutPlan(t *testing.T) {
	m := llmtest.New().Reply(isTask, askCall(`{"mode":"text","question":"Which file?"}`), llmtest.Text("Opened notes.txt."))
	g := mustNew(t, planexec.Config{Model: m, AskMode: true})
	opts := thread(checkpoint.NewMemory(), "direct-ask")
	var waiting []planexec.Ask
	for ev, err := range g.Stream(context.Background(), planexec.Input("Open the file"), append(opts, graph.WithEvents(graph.EventCustom))...) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := planexec.EventFrom(ev); ok && e.Kind == planexec.EventWaiting {
			q, _ := planexec.AskFrom(e.Interrupts[0])
			waiting = append(waiting, q)
		}
	}
	if len(waiting) != 1 || waiting[0].Question != "Which file?" || waiting[0].Step != "" {
		t.Fatalf("waiting events: %+v", waiting)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume(planexec.TextAnswer("notes.txt")))...)
	if err != nil || answer(t, res) != "Opened notes.txt." {
		t.Fatalf("err = %v", err)
	}
}
