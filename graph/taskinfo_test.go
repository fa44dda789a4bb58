package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// Task events say what scheduled a task, what it read, what it wrote, its
// attempt and its interrupts.
func TestTaskEventsCarryTriggersInputAndResult(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("a", logNode(log, "a"))
	b.AddNode("b", logNode(log, "b"))
	graph.AddSendNode(b, "c", func(_ context.Context, _ graph.State, item string) (graph.Output, error) {
		return graph.Writes(graph.Append(log, "c:"+item)), nil
	})
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddFanout("a", func(context.Context, graph.State) ([]graph.Target, error) {
		return []graph.Target{graph.Send("c", "x")}, nil
	}, "c")
	b.AddEdge("b", graph.END)
	b.AddEdge("c", graph.END)
	g := mustCompile(t, b)
	var got []string
	for ev, err := range g.Stream(context.Background(), nil, graph.WithEvents(graph.EventTasks)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case graph.EventTaskStart:
			got = append(got, fmt.Sprintf("start %s triggers=%v payload=%v input=%v", ev.Node, ev.Task.Triggers, ev.Task.Payload, log.Get(ev.Task.Input)))
		case graph.EventTaskEnd:
			got = append(got, fmt.Sprintf("end %s attempt=%d result=%v", ev.Node, ev.Task.Attempt, ev.Task.Result))
		}
	}
	want := []string{
		"start a triggers=[__start__] payload=<nil> input=[]",
		"end a attempt=1 result=[set log [a]]",
		"start b triggers=[a] payload=<nil> input=[a]",
		"start c triggers=[a] payload=x input=[a]",
	}
	if d := cmp.Diff(want, got[:4]); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// A snapshot's tasks carry a finished task's writes, a failed attempt's
// error and an interrupted task's interrupts.
func TestSnapshotTasksCarryWritesErrorsAndInterrupts(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	var c counter
	b := graph.New(log)
	b.AddNode("ok", logNode(log, "ok"))
	b.AddNode("bad", func(context.Context, graph.State) (graph.Output, error) {
		return nil, errors.New("disk on fire")
	})
	b.AddNode("ask", asker(&c, log, "ask"))
	for _, n := range []string{"ok", "bad", "ask"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "snap")
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("no error")
	}
	s, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]graph.TaskState{}
	for _, ts := range s.Tasks {
		byNode[ts.Node] = ts
	}
	if ts := byNode["ok"]; !ts.Finished || fmt.Sprint(ts.Writes) != "[set log [ok]]" {
		t.Errorf("ok: %+v", ts)
	}
	if ts := byNode["bad"]; ts.Finished || !strings.Contains(ts.Error, "disk on fire") {
		t.Errorf("bad: %+v, want its error", ts)
	}
	if d := cmp.Diff([]string{"ask", "bad"}, s.Next); d != "" {
		t.Errorf("next (-want +got):\n%s", d)
	}
}

var errRate = errors.New("rate limited")

// With several retry policies the first whose matcher accepts the error
// decides, counting the task's attempts across policies; the node and the
// task events see the attempt number.
func TestSeveralRetryPolicies(t *testing.T) {
	var seen []int
	fails := []error{errRate, errRate, httpErr(503), nil}
	b := graph.New(answer)
	b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		n := graph.Attempt(ctx)
		seen = append(seen, n)
		return nil, fails[n-1]
	}, graph.WithRetry(
		graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond, RetryOn: func(err error) bool { return errors.Is(err, errRate) }},
		graph.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond},
	))
	b.SetEntry("call")
	b.AddEdge("call", graph.END)
	g := mustCompile(t, b)
	var endAttempt int
	for ev, err := range g.Stream(context.Background(), nil, graph.WithEvents(graph.EventTaskEnd)) {
		if err != nil {
			t.Fatal(err)
		}
		endAttempt = ev.Task.Attempt
	}
	if !cmp.Equal(seen, []int{1, 2, 3, 4}) || endAttempt != 4 {
		t.Errorf("attempts %v, end event attempt %d; want 1-4", seen, endAttempt)
	}
	// The second policy allows 2 attempts in all: the 503 at attempt 3 is
	// not retried.
	seen = nil
	b = graph.New(answer)
	b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		n := graph.Attempt(ctx)
		seen = append(seen, n)
		return nil, fails[n-1]
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond, RetryOn: func(err error) bool { return errors.Is(err, errRate) }}),
		graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
	b.SetEntry("call")
	b.AddEdge("call", graph.END)
	if _, err := mustCompile(t, b).Invoke(context.Background(), nil); err == nil || !cmp.Equal(seen, []int{1, 2, 3}) {
		t.Errorf("attempts %v err %v; want the 503 at attempt 3 to fail the run", seen, err)
	}
	if graph.Attempt(context.Background()) != 0 {
		t.Error("Attempt outside a node is not 0")
	}
}
