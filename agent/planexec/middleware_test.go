package planexec_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// The tool loop runs its calls through Config.Middleware: a run limit of
// one lookup lets the first of two parallel lookups run and refuses the
// second, counting in the agent's state.
func TestMiddlewareOnTheToolLoop(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"}))
	m.When(node(planexec.DirectPrefix+react.ModelNode),
		llmtest.ToolCalls(llmtest.Call("lookup", `{"q":"a"}`), llmtest.Call("lookup", `{"q":"b"}`)),
		llmtest.Text("Found a."))
	var c counter
	limit, err := middleware.ToolLimit(middleware.ToolLimitConfig{Tool: "lookup", RunLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, planexec.Config{Model: m, Tools: []tool.Tool{lookup(&c)}, Middleware: []middleware.Middleware{limit}, Logger: quiet})
	res, err := g.Invoke(context.Background(), planexec.Input("look a and b up"))
	if err != nil {
		t.Fatal(err)
	}
	if c.get("lookup:a") != 1 || c.get("lookup:b") != 0 {
		t.Errorf("ran %v", c.n)
	}
	msgs := planexec.Messages.Get(res.State)
	found := false
	for _, msg := range msgs {
		if msg.IsError && strings.Contains(msg.Text(), "at most 1 times per run") {
			found = true
		}
	}
	if !found {
		t.Errorf("no refusal in %d messages", len(msgs))
	}
}

// The planner's own model calls (intent, and the loop's) pass through
// the model hooks of Config.Middleware too: a hook sees every request,
// by the node that made it.
func TestMiddlewareOnThePhaseCalls(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"}))
	m.When(node(planexec.DirectPrefix+react.ModelNode), llmtest.Text("Done."))
	var seen []string
	spy := middleware.ModelFunc("spy", func(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		seen = append(seen, graph.NodeName(ctx))
		return next(ctx, c)
	})
	g := mustNew(t, planexec.Config{Model: m, Middleware: []middleware.Middleware{spy}, Logger: quiet})
	if _, err := g.Invoke(context.Background(), planexec.Input("say done")); err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(m.Requests()) || !slices.Contains(seen, planexec.IntentNode) {
		t.Errorf("the hook saw %v; the model got %d requests", seen, len(m.Requests()))
	}
}

// lastPhase is a stateful middleware that records which node made the
// last model call it saw.
type lastPhase struct{ key *graph.Key[string] }

func (lastPhase) Name() string { return "last_phase" }

func (l lastPhase) StateKeys() []graph.AnyKey { return []graph.AnyKey{l.key} }

func (l lastPhase) WrapModel(ctx context.Context, c *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	c.Write(l.key.Set(graph.NodeName(ctx)))
	return next(ctx, c)
}

// Writes a model hook adds to a planner phase's call are saved with the
// phase's node, as the step loops save theirs.
func TestPhaseCallWritesAreSaved(t *testing.T) {
	m := llmtest.New()
	m.When(node(planexec.PlanNode), simplePlan(planexec.Step{ID: "a", Title: "Read", Description: "Read the notes."})).Repeat()
	m.When(inStep("a"), llmtest.Text("read them")).Repeat()
	m.When(node(planexec.DeliverNode), llmtest.Text("Delivered.")).Repeat()
	mw := lastPhase{graph.NewKey[string]("last_phase")}
	g := mustNew(t, planexec.Config{Model: m, PlanMode: true, TaskOnly: true, Middleware: []middleware.Middleware{mw}, Logger: quiet})
	res, err := g.Invoke(t.Context(), planexec.Input("Read my notes"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mw.key.Get(res.State); got != planexec.DeliverNode {
		t.Errorf("the hook's key holds %q; want %q, written by the delivery's call", got, planexec.DeliverNode)
	}
}
