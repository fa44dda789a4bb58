package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	a2atool "github.com/trellis-agents/trellis/tool/a2a"
)

var remoteReply = graph.NewKey[string]("reply")

// remoteGraph is a local graph of one node calling the agent.
func remoteGraph(t *testing.T, a *a2atool.Agent, text string) *graph.Graph {
	t.Helper()
	b := graph.New(remoteReply)
	b.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		res, err := a.Call(ctx, text)
		if err != nil {
			return nil, err
		}
		return graph.Writes(remoteReply.Set(res.Text)), nil
	})
	b.SetEntry("hop")
	b.AddEdge("hop", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type a2atoolAgent = a2atool.Agent

// newA2ATool is a remote agent for a card URL on this host.
func newA2ATool(cardURL string) (*a2atool.Agent, error) {
	return a2atool.New(a2atool.Config{Name: "remote", CardURL: cardURL, AllowPrivate: true, PollInterval: 20 * time.Millisecond})
}

func remoteAgent(t *testing.T, e *env, assistant string) *a2atool.Agent {
	t.Helper()
	return remoteAgentTB(t, e, assistant)
}

// Trellis calling Trellis: a local graph calls the remote planner over
// A2A; each of the planner's questions is a local interrupt carrying the
// planner's own payload and answer schema (so a local page shows the same
// choice or form); the answers go down on the same remote task until it
// completes with the planner's delivery.
func TestCallingTheRemotePlanner(t *testing.T) {
	e := newEnv(t)
	g := remoteGraph(t, remoteAgent(t, e, "planner-a"), "Organise our team offsite")
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local-1")}
	answers := []any{"lisbon", map[string]any{"people": 12, "length": "2 days", "notes": "vegetarian food"}, "yes", "yes", "yes", "yes"}
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Writes(remoteReply.Set("")), opts...)
	var kinds []string
	for i := 0; err != nil; i++ {
		ie, ok := errors.AsType[*graph.InterruptError](err)
		if !ok || len(ie.Interrupts) != 1 || i >= len(answers) {
			t.Fatalf("turn %d: %v", i, err)
		}
		in := ie.Interrupts[0]
		var k struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(in.Payload, &k)
		kinds = append(kinds, k.Kind)
		if i == 0 && (!strings.Contains(string(in.Payload), planner.CityQuestion) || len(in.Schema) == 0) {
			t.Errorf("the first local interrupt %s (schema %s): want the planner's city question and its schema", in.Payload, in.Schema)
		}
		res, err = g.Invoke(ctx, nil, append(opts, graph.WithResume(answers[i]))...)
	}
	if got := remoteReply.Get(res.State); !strings.Contains(got, planner.DeliveredText) {
		t.Errorf("the local reply %q; want the planner's delivery", got)
	}
	if len(kinds) < 3 || kinds[0] == "" || kinds[0] == "ask_human" {
		t.Errorf("the local interrupts' kinds %v; want the planner's own", kinds)
	}
}

// Cancelling the local run cancels the remote Trellis task (its run is
// stopped there).
func TestCallingCancelsTheRemoteTask(t *testing.T) {
	e := newEnv(t)
	g := remoteGraph(t, remoteAgent(t, e, "slow-a"), "go slowly")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var task string
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("local-1"), graph.WithEvents(graph.EventCustom)}
	var runErr error
	for ev, err := range g.Stream(ctx, graph.Writes(remoteReply.Set("")), opts...) {
		if err != nil {
			runErr = err
			break
		}
		if x, ok := ev.Custom.(a2atool.Event); ok && x.State == "working" && task == "" {
			task = x.TaskID
			<-e.slowStarted
			cancel()
		}
	}
	if !errors.Is(runErr, context.Canceled) || task == "" {
		t.Fatalf("the local run: %v (task %q); want it cancelled after the remote task started", runErr, task)
	}
	run, err := e.db.GetRun(context.Background(), DefaultTenant, strings.Split(task, taskSep)[1], strings.Split(task, taskSep)[0])
	if err != nil || run.CancelRequested == "" {
		t.Errorf("the remote run %+v %v; want its cancel requested", run, err)
	}
}
