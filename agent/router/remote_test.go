package router_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// askingRemote stands for an agent on another server that keeps its
// progress as durable steps: it "sends" the task once (a durable step),
// and asks the person a question before answering.
type askingRemote struct{ sent *ran }

func (r askingRemote) Ask(ctx context.Context, task string) (string, error) {
	if _, err := graph.Durable(ctx, "send", func(context.Context) (bool, error) {
		r.sent.add("remote", task)
		return true, nil
	}); err != nil {
		return "", err
	}
	name, err := graph.Interrupt[string](ctx, map[string]any{"kind": "ask_human", "question": "Whom should I greet?"})
	if err != nil {
		return "", err
	}
	return "Hello, " + name + " (" + task + ")", nil
}

// A remote sub-agent (Agent.Remote, no Graph) is called like a local one;
// its question stops the router's run as the run's interrupt, the answer
// goes back to the same call, which does not send the task again, and the
// remote's answer is the call's result.
func TestRemoteSubAgent(t *testing.T) {
	var sent ran
	m := llmtest.New().Reply(
		llmtest.ToolCalls(llmtest.Call("greeter", `{"task":"greet warmly"}`)),
		llmtest.Text("Greeted."),
	)
	cfg := router.Config{Model: m, Agents: []router.Agent{{Name: "greeter", Description: "Greets people, on another server.", Remote: askingRemote{&sent}}}}
	g := mustNew(t, cfg)
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("hop")}
	res, err := g.Invoke(context.Background(), react.Input("Greet someone."), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("err %v, interrupts %v; want the remote's question", err, res.Interrupts)
	}
	res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume("Ada"))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(t, m.LastRequest().Messages, "call_1"); got.Text() != "Hello, Ada (greet warmly)" || got.IsError {
		t.Errorf("the router model saw %+v", got)
	}
	if o := finished(t, res.State); o.Answer != "Greeted." {
		t.Errorf("outcome %+v", o)
	}
	if n := sent.get("remote"); n != 1 {
		t.Errorf("the task was sent %d times; want once", n)
	}
	if _, err := router.New(router.Config{Model: m, Agents: []router.Agent{{Name: "nothing", Description: "Has neither."}}}); err == nil {
		t.Error("an agent with neither Graph nor Remote was accepted")
	}
}
