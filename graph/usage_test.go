package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// TestUsageRollsUpPerTaskAndRun checks that usage recorded from several
// goroutines of one node, from a subgraph and from a graph invoked inside a
// node lands on the right tasks and sums into Result.Usage.
func TestUsageRollsUpPerTaskAndRun(t *testing.T) {
	one := graph.Usage{InputTokens: 10, OutputTokens: 2, Requests: 1}

	nb := graph.New(sharedLog)
	nb.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
		graph.RecordUsage(ctx, one)
		return nil, nil
	})
	nb.SetEntry("model")
	nb.AddEdge("model", graph.END)
	nested := mustCompile(t, nb)

	b := graph.New(sharedLog)
	b.AddNode("parallel", func(ctx context.Context, s graph.State) (graph.Output, error) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { graph.RecordUsage(ctx, one) })
		}
		wg.Wait()
		return nil, nil
	})
	b.AddSubgraph("sub", nested)
	b.AddNode("invoker", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if _, err := nested.Invoke(ctx, nil); err != nil {
			return nil, err
		}
		_, err := nested.Invoke(ctx, nil)
		return nil, err
	})
	b.AddNode("idle", logNode(sharedLog, "idle"))
	b.SetEntry("parallel")
	b.AddEdge("parallel", "sub")
	b.AddEdge("sub", "invoker")
	b.AddEdge("invoker", "idle")
	b.AddEdge("idle", graph.END)
	g := mustCompile(t, b)

	ended := map[string]graph.Usage{}
	var res *graph.Result
	for ev, err := range g.Stream(context.Background(), nil, graph.WithEvents(graph.EventTaskEnd)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Namespace == "" {
			ended[ev.Node] = ev.Task.Usage
		}
	}
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	times := func(n int64) graph.Usage {
		return graph.Usage{InputTokens: 10 * n, OutputTokens: 2 * n, Requests: n}
	}
	want := map[string]graph.Usage{"parallel": times(4), "sub": times(1), "invoker": times(2)}
	if d := cmp.Diff(want, res.NodeUsage); d != "" {
		t.Errorf("Result.NodeUsage (-want +got):\n%s", d)
	}
	want["idle"] = graph.Usage{}
	if d := cmp.Diff(want, ended); d != "" {
		t.Errorf("per-node usage on EventTaskEnd (-want +got):\n%s", d)
	}
	if res.Usage() != times(7) {
		t.Errorf("Result.Usage = %+v, want %+v", res.Usage(), times(7))
	}
	if res.Usage().TotalTokens() != 84 {
		t.Errorf("TotalTokens = %d, want 84", res.Usage().TotalTokens())
	}
	graph.RecordUsage(context.Background(), one) // outside a node: no effect, no panic
}
