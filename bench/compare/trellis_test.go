package compare

// Trellis (github.com/trellis-agents/trellis/graph) side.
//
// State is a schema of typed keys with reducers; a node reads the step's
// frozen snapshot and returns writes, which are applied through the keys'
// reducers at the end of the superstep. All tasks of a superstep run in
// parallel.

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

func benchChainTrellis(b *testing.B, n int) {
	ctx := context.Background()
	count := graph.NewKey[int]("count") // last-value key
	g := graph.New(count)
	inc := func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(count.Set(count.Get(s) + 1)), nil
	}
	for i := 1; i <= n; i++ {
		g.AddNode(chainNode(i), inc)
	}
	g.AddEdge(graph.START, chainNode(1))
	for i := 1; i < n; i++ {
		g.AddEdge(chainNode(i), chainNode(i+1))
	}
	g.AddEdge(chainNode(n), graph.END)
	// A chain of n nodes takes n supersteps. Chain100 sits exactly at
	// graph.DefaultStepLimit (100, a guard for agent loops), so size the
	// limit from n instead of relying on the default.
	r, err := g.Compile(graph.WithStepLimit(n + 10))
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, err := r.Invoke(ctx, graph.Writes(count.Set(0)))
		must(b, err)
		check(b, "trellis", count.Get(res.State), n)
	}
}

// Fan-out: START → source → w0..w99 (static edges: one superstep of 100
// parallel tasks) → join (AddJoin: runs once after all 100 finished) → END.
// Each worker writes 1 into a Sum[int] key; the join reads the sum and
// copies it into a last-value "result" key, which is checked.
func benchFanoutTrellis(b *testing.B, n int) {
	ctx := context.Background()
	sum := graph.NewKey("sum", graph.Sum[int]())
	result := graph.NewKey[int]("result")
	g := graph.New(sum, result)
	g.AddNode("source", func(context.Context, graph.State) (graph.Output, error) {
		return nil, nil
	})
	workers := make([]string, n)
	for i := range n {
		workers[i] = worker(i)
		g.AddNode(workers[i], func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(sum.Set(1)), nil
		})
	}
	g.AddNode("join", func(_ context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(result.Set(sum.Get(s))), nil
	})
	g.AddEdge(graph.START, "source")
	for _, w := range workers {
		g.AddEdge("source", w)
	}
	g.AddJoin("join", workers...)
	g.AddEdge("join", graph.END)
	r, err := g.Compile()
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res, err := r.Invoke(ctx, graph.Writes(sum.Set(0)))
		must(b, err)
		check(b, "trellis", result.Get(res.State), n)
	}
}
