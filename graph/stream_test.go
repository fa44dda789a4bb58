package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// describe renders the parts of an event that a sequence test compares.
func describe(ev graph.Event) string {
	s := strings.Join(strings.Fields(fmt.Sprintf("%s %d %s", ev.Kind, ev.Step, ev.Node)), " ")
	switch ev.Kind {
	case graph.EventValues:
		s += " " + ev.State.String()
	case graph.EventUpdates:
		s += " " + fmt.Sprint(ev.Update)
	case graph.EventCustom:
		s += " " + fmt.Sprint(ev.Custom)
	case graph.EventMessages:
		s += fmt.Sprintf(" %s:%s", ev.Message.Part, ev.Message.Text)
	}
	if ev.Namespace != "" {
		s += " @" + strings.Split(ev.Namespace, ":")[0]
	}
	return strings.TrimSpace(s)
}

func collect(t *testing.T, g *graph.Graph, in graph.Update, opts ...graph.RunOption) []string {
	t.Helper()
	var out []string
	for ev, err := range g.Stream(context.Background(), in, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, describe(ev))
	}
	return out
}

func chainAB() (*graph.Builder, *graph.Key[[]string]) {
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("a", logNode(log, "a"))
	b.AddNode("b", logNode(log, "b"))
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	return b, log
}

func TestStreamValuesAndUpdatesSequence(t *testing.T) {
	b, log := chainAB()
	g := mustCompile(t, b)
	in := graph.Writes(graph.Append(log, "in"))
	tests := []struct {
		kinds graph.EventKind
		want  []string
	}{
		{graph.EventValues, []string{
			"values 0 {log: [in]}",
			"values 1 {log: [in a]}",
			"values 2 {log: [in a b]}",
		}},
		{graph.EventUpdates, []string{
			"updates 1 a [set log [a]]",
			"updates 2 b [set log [b]]",
		}},
		{graph.EventValues | graph.EventUpdates | graph.EventTasks, []string{
			"values 0 {log: [in]}",
			"task-start 1 a", "task-end 1 a", "updates 1 a [set log [a]]", "values 1 {log: [in a]}",
			"task-start 2 b", "task-end 2 b", "updates 2 b [set log [b]]", "values 2 {log: [in a b]}",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.kinds.String(), func(t *testing.T) {
			if d := cmp.Diff(tc.want, collect(t, g, in, graph.WithEvents(tc.kinds))); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestEventsCarryTaskCoordinates(t *testing.T) {
	b := graph.New()
	for _, n := range []string{"x", "y"} {
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			graph.Emit(ctx, "hello from "+n)
			w := graph.Messages(ctx)
			w.Write(graph.MessageChunk{MessageID: n, Part: graph.PartReasoning, Text: "hmm"})
			w.Write(graph.MessageChunk{MessageID: n, Part: graph.PartText, Text: "answer"})
			if got, want := graph.TaskID(ctx), ""; got == want || graph.NodeName(ctx) != n || graph.Step(ctx) != 1 {
				return nil, errors.New("task coordinates missing from context")
			}
			return nil, nil
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g := mustCompile(t, b)
	ids := map[string]string{}
	var got []string
	for ev, err := range g.Stream(context.Background(), nil, graph.WithEvents(graph.EventCustom|graph.EventMessages|graph.EventTaskStart)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventTaskStart {
			ids[ev.Node] = ev.TaskID
			continue
		}
		if ev.TaskID == "" || ev.TaskID != ids[ev.Node] || ev.Step != 1 {
			t.Errorf("event %v has task ID %q, want %q", ev, ev.TaskID, ids[ev.Node])
		}
		got = append(got, describe(ev))
	}
	if ids["x"] == ids["y"] || len(ids["x"]) != 32 {
		t.Errorf("task IDs %v are not distinct 128-bit IDs", ids)
	}
	slices.Sort(got) // x and y run in parallel: compare per node, in order
	want := []string{
		"custom 1 x hello from x", "custom 1 y hello from y",
		"messages 1 x reasoning:hmm", "messages 1 x text:answer",
		"messages 1 y reasoning:hmm", "messages 1 y text:answer",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// Task IDs are deterministic: the same graph gives the same IDs every run.
func TestTaskIDsDeterministic(t *testing.T) {
	b, _ := chainAB()
	g := mustCompile(t, b)
	r1, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := g.Invoke(context.Background(), nil)
	if r1.Path[0].TaskID() != r2.Path[0].TaskID() || r1.Path[0].TaskID() == r1.Path[1].TaskID() {
		t.Errorf("task IDs not deterministic and distinct: %+v %+v", r1.Path, r2.Path)
	}
}

// Kinds nobody asked for cost nothing: the writer reports itself disabled and
// Emit is a no-op.
func TestUnrequestedKindsAreDisabled(t *testing.T) {
	var enabled []bool
	b := graph.New()
	b.AddNode("a", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		enabled = append(enabled, graph.Messages(ctx).Enabled())
		graph.Emit(ctx, "ignored")
		return nil, nil
	})
	b.SetEntry("a")
	b.AddEdge("a", graph.END)
	g := mustCompile(t, b)
	if got := collect(t, g, nil, graph.WithEvents(graph.EventValues)); len(got) != 2 {
		t.Errorf("events = %v, want only the two values events", got)
	}
	if _, err := g.Invoke(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_ = collect(t, g, nil, graph.WithEvents(graph.EventMessages))
	if d := cmp.Diff([]bool{false, false, true}, enabled); d != "" {
		t.Errorf("Messages(ctx).Enabled() (-want +got):\n%s", d)
	}
}

// Breaking out of the loop cancels the run; goleak (TestMain) checks that no
// goroutine is left behind.
func TestBreakCancelsRun(t *testing.T) {
	var calls atomic.Int32
	count := graph.NewKey("n", graph.Sum[int]())
	b := graph.New(count)
	for _, n := range []string{"p", "q"} { // parallel, so tasks run on goroutines
		b.AddNode(n, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			calls.Add(1)
			graph.Emit(ctx, n)
			return graph.Writes(count.Set(1)), nil
		})
		b.AddEdge(graph.START, n)
		b.AddEdge(n, "join")
	}
	b.AddNode("join", writeNode())
	b.AddEdge("join", "p")
	b.AddEdge("join", "q")
	g := mustCompile(t, b)
	seen := 0
	for ev, err := range g.Stream(context.Background(), nil, graph.WithStepLimit(1000)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventCustom {
			seen++
			if seen == 3 {
				break
			}
		}
	}
	if c := calls.Load(); c > 6 {
		t.Errorf("the run went on after the consumer left: %d node calls", c)
	}
}

func TestStreamYieldsRunError(t *testing.T) {
	b := graph.New()
	b.AddNode("a", func(context.Context, graph.State) (graph.Output, error) { return nil, errors.New("nope") })
	b.SetEntry("a")
	b.AddEdge("a", graph.END)
	var last error
	n := 0
	for _, err := range mustCompile(t, b).Stream(context.Background(), nil) {
		n++
		last = err
	}
	if last == nil || !strings.Contains(last.Error(), "nope") {
		t.Fatalf("last error = %v after %d items", last, n)
	}
}
