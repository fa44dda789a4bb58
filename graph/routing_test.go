package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

func pathNodes(res *graph.Result) []string {
	var out []string
	for _, p := range res.Path {
		out = append(out, fmt.Sprintf("%d:%s", p.Step, p.Node))
	}
	return out
}

// Parallel nodes' writes to an append key are applied in task order (node
// name order), not in finish order: here "z" finishes first.
func TestParallelWritesApplyInTaskOrder(t *testing.T) {
	for range 20 {
		log := graph.NewKey("log", graph.Concat[string]())
		zDone := make(chan struct{})
		b := graph.New(log)
		b.AddNode("a", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			<-zDone // a finishes after z
			return graph.Writes(graph.Append(log, "a")), nil
		})
		b.AddNode("m", logNode(log, "m"))
		b.AddNode("z", func(context.Context, graph.State) (graph.Output, error) {
			defer close(zDone)
			return graph.Writes(graph.Append(log, "z")), nil
		})
		for _, n := range []string{"z", "m", "a"} { // edge order must not matter either
			b.AddEdge(graph.START, n)
			b.AddEdge(n, graph.END)
		}
		res, err := mustCompile(t, b).Invoke(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"a", "m", "z"}, log.Get(res.State)); d != "" {
			t.Fatalf("write order (-want +got):\n%s", d)
		}
	}
}

// A join runs its target once after all sources; two plain edges run it
// after each source finishes when the sources finish in different steps.
func TestJoinVersusPlainEdges(t *testing.T) {
	build := func(join bool) *graph.Builder {
		log := graph.NewKey("log", graph.Concat[string]())
		b := graph.New(log)
		for _, n := range []string{"short", "long1", "long2", "sink"} {
			b.AddNode(n, logNode(log, n))
		}
		b.AddEdge(graph.START, "short")
		b.AddEdge(graph.START, "long1")
		b.AddEdge("long1", "long2")
		if join {
			b.AddJoin("sink", "short", "long2")
		} else {
			b.AddEdge("short", "sink")
			b.AddEdge("long2", "sink")
		}
		b.AddEdge("sink", graph.END)
		return b
	}
	tests := []struct {
		join bool
		want []string
	}{
		{false, []string{"1:long1", "1:short", "2:long2", "2:sink", "3:sink"}},
		{true, []string{"1:long1", "1:short", "2:long2", "3:sink"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("join=%v", tc.join), func(t *testing.T) {
			res, err := mustCompile(t, build(tc.join)).Invoke(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, pathNodes(res)); d != "" {
				t.Errorf("path (-want +got):\n%s", d)
			}
		})
	}
}

// A deferred node waits until nothing else is pending, then runs once.
func TestDeferredNodeRunsLast(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	for _, n := range []string{"a", "b1", "b2", "b3"} {
		b.AddNode(n, logNode(log, n))
	}
	b.AddNode("final", logNode(log, "final"), graph.Deferred())
	b.AddEdge(graph.START, "a")
	b.AddEdge(graph.START, "b1")
	b.AddEdge("b1", "b2")
	b.AddEdge("b2", "b3")
	b.AddEdge("a", "final")
	b.AddEdge("b3", "final")
	b.AddEdge("final", graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:a", "1:b1", "2:b2", "3:b3", "4:final"}
	if d := cmp.Diff(want, pathNodes(res)); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
}

// Send starts one task per item; results land in send order even when later
// sends finish first.
func TestSendMapReduceOrderedBySendIndex(t *testing.T) {
	items := graph.NewKey[[]int]("items")
	results := graph.NewKey("results", graph.Concat[string]())
	total := graph.NewKey("total", graph.Sum[int]())
	const n = 50
	b := graph.New(items, results, total)
	b.AddNode("split", writeNode())
	b.AddFanout("split", func(_ context.Context, s graph.State) ([]graph.Target, error) {
		var ts []graph.Target
		for _, it := range items.Get(s) {
			ts = append(ts, graph.Send("work", it))
		}
		return ts, nil
	}, "work")
	gates := make([]chan struct{}, n)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	graph.AddSendNode(b, "work", func(ctx context.Context, _ graph.State, item int) (graph.Output, error) {
		if item+1 < n {
			<-gates[item+1] // each item finishes after the next one
		}
		close(gates[item])
		return graph.Writes(graph.Append(results, fmt.Sprintf("r%d", item)), total.Set(item)), nil
	})
	b.AddNode("reduce", writeNode())
	b.AddEdge(graph.START, "split")
	b.AddEdge("work", "reduce")
	b.AddEdge("reduce", graph.END)
	in := make([]int, n)
	var want []string
	for i := range in {
		in[i] = i
		want = append(want, fmt.Sprintf("r%d", i))
	}
	res, err := mustCompile(t, b).Invoke(context.Background(), graph.Writes(items.Set(in)))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, results.Get(res.State)); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	if got := total.Get(res.State); got != n*(n-1)/2 {
		t.Errorf("total = %d", got)
	}
	if res.Steps != 3 {
		t.Errorf("steps = %d, want 3 (split, all work in parallel, reduce once)", res.Steps)
	}
}

func TestSendPayloadErrors(t *testing.T) {
	tests := []struct {
		name   string
		target graph.Target
		want   string
	}{
		{"wrong payload type", graph.Send("typed", "not an int"), "takes a payload of type int, but a Send gave it string"},
		{"payload to plain node", graph.Send("plain", 1), "takes none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := graph.New()
			b.AddNode("src", writeNode())
			b.AddFanout("src", func(context.Context, graph.State) ([]graph.Target, error) {
				return []graph.Target{tc.target}, nil
			}, "typed", "plain")
			graph.AddSendNode(b, "typed", func(context.Context, graph.State, int) (graph.Output, error) { return nil, nil })
			b.AddNode("plain", writeNode())
			b.SetEntry("src")
			b.AddEdge("typed", graph.END)
			b.AddEdge("plain", graph.END)
			_, err := mustCompile(t, b).Invoke(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// Command goto writes its update and replaces the node's static edges.
func TestCommandGotoWithUpdateReplacesEdges(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	note := graph.NewKey[string]("note")
	b := graph.New(log, note)
	b.AddNode("decide", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Command{
			Goto:   []graph.Target{graph.To("special")},
			Update: graph.Writes(note.Set("routed"), graph.Append(log, "decide")),
		}, nil
	}, graph.Destinations("special"))
	b.AddNode("normal", logNode(log, "normal"))
	b.AddNode("special", logNode(log, "special"))
	b.SetEntry("decide")
	b.AddEdge("decide", "normal") // not followed: goto replaces edges
	b.AddEdge("normal", graph.END)
	b.AddEdge("special", graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"decide", "special"}, log.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if note.Get(res.State) != "routed" {
		t.Errorf("update not applied: %v", res.State)
	}
}

// A Command with an update and no goto follows the node's edges.
func TestCommandWithoutGotoFollowsEdges(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddNode("a", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Command{Update: graph.Writes(graph.Append(log, "a"))}, nil
	})
	b.AddNode("b", logNode(log, "b"))
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "b"}, log.Get(res.State)); d != "" {
		t.Error(d)
	}
}

func TestUndeclaredGotoFails(t *testing.T) {
	b := graph.New()
	b.AddNode("a", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Command{Goto: []graph.Target{graph.To("b")}}, nil
	}, graph.Destinations(graph.END))
	b.AddNode("b", writeNode())
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), `goes to "b", which it does not declare`) {
		t.Fatalf("err = %v", err)
	}
}

// A router sees the snapshot plus its own node's writes, not its siblings'.
func TestRouterSeesOwnWritesOnly(t *testing.T) {
	mine := graph.NewKey[int]("mine")
	theirs := graph.NewKey[int]("theirs")
	seen := make(chan [2]int, 1)
	b := graph.New(mine, theirs)
	b.AddNode("a", writeNode(mine.Set(1)))
	b.AddNode("b", writeNode(theirs.Set(2)))
	b.AddConditionalEdges("a", func(_ context.Context, s graph.State) (string, error) {
		seen <- [2]int{mine.Get(s), theirs.Get(s)}
		return "end", nil
	}, map[string]string{"end": graph.END})
	b.AddEdge(graph.START, "a")
	b.AddEdge(graph.START, "b")
	b.AddEdge("b", graph.END)
	if _, err := mustCompile(t, b).Invoke(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != [2]int{1, 0} {
		t.Errorf("router saw mine=%d theirs=%d, want 1 and 0", got[0], got[1])
	}
}

func TestConditionalEdgeUnknownKey(t *testing.T) {
	b := graph.New()
	b.AddNode("a", writeNode())
	b.SetEntry("a")
	b.AddConditionalEdges("a", func(context.Context, graph.State) (string, error) { return "maybe", nil },
		map[string]string{"yes": graph.END, "no": graph.END})
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), `returned "maybe", which is not in the path map ["no" "yes"]`) {
		t.Fatalf("err = %v", err)
	}
}

// A conditional edge from START routes on the input.
func TestConditionalEntry(t *testing.T) {
	mode := graph.NewKey[string]("mode")
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(mode, log)
	b.AddNode("fast", logNode(log, "fast"))
	b.AddNode("slow", logNode(log, "slow"))
	b.AddConditionalEdges(graph.START, func(_ context.Context, s graph.State) (string, error) { return mode.Get(s), nil },
		map[string]string{"fast": "fast", "slow": "slow"})
	b.AddEdge("fast", graph.END)
	b.AddEdge("slow", graph.END)
	g := mustCompile(t, b)
	for _, m := range []string{"fast", "slow"} {
		res, err := g.Invoke(context.Background(), graph.Writes(mode.Set(m)))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{m}, log.Get(res.State)); d != "" {
			t.Error(d)
		}
	}
}

func TestEdgeTriggeredPayloadNodeFails(t *testing.T) {
	b := graph.New()
	b.AddNode("a", writeNode())
	graph.AddSendNode(b, "w", func(context.Context, graph.State, int) (graph.Output, error) { return nil, nil })
	b.SetEntry("a")
	b.AddEdge("a", "w")
	b.AddEdge("w", graph.END)
	// Caught when the graph compiles, not when the edge is first taken.
	_, err := b.Compile()
	if err == nil || !strings.Contains(err.Error(), "reach it with graph.Send") {
		t.Fatalf("err = %v", err)
	}
}
