package compare

// Eino (github.com/cloudwego/eino/compose) side.
//
// Eino graphs are data-flow graphs: a node's output is the next node's input,
// so the "state" here is the int value flowing along the edges (Graph[int,int]).
// Nodes are InvokableLambda nodes.
//
// Trigger mode: eino's default for Graph is AnyPredecessor (Pregel-style
// supersteps; NOT AllPredecessor). The chain is compiled with the default,
// which is also the faster mode for a chain (measured: ~20-40% faster than
// AllPredecessor on this box). The fan-out is compiled with
// WithNodeTriggerMode(AllPredecessor) (eino's DAG mode: a node runs once all
// of its predecessors have finished), the mode that gives the join real
// wait-for-all semantics.

import (
	"context"
	"testing"

	"github.com/cloudwego/eino/compose"
)

func benchChainEino(b *testing.B, n int) {
	ctx := context.Background()
	g := compose.NewGraph[int, int]()
	inc := compose.InvokableLambda(func(_ context.Context, count int) (int, error) {
		return count + 1, nil
	})
	for i := 1; i <= n; i++ {
		must(b, g.AddLambdaNode(chainNode(i), inc))
	}
	must(b, g.AddEdge(compose.START, chainNode(1)))
	for i := 1; i < n; i++ {
		must(b, g.AddEdge(chainNode(i), chainNode(i+1)))
	}
	must(b, g.AddEdge(chainNode(n), compose.END))
	r, err := g.Compile(ctx) // default trigger mode: AnyPredecessor
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got, err := r.Invoke(ctx, 0)
		must(b, err)
		check(b, "eino", got, n)
	}
}

// Fan-out: START → source → w0..w99 → join → END. Each worker emits a
// one-entry map {"wI": 1}; eino merges the outputs of all predecessors of the
// join with its built-in map merge (keys must be disjoint), and the join sums
// the merged map.
func benchFanoutEino(b *testing.B, n int) {
	ctx := context.Background()
	g := compose.NewGraph[int, int]()
	must(b, g.AddLambdaNode("source", compose.InvokableLambda(func(_ context.Context, sum int) (int, error) {
		return sum, nil
	})))
	for i := range n {
		name := worker(i)
		must(b, g.AddLambdaNode(name, compose.InvokableLambda(func(_ context.Context, _ int) (map[string]int, error) {
			return map[string]int{name: 1}, nil
		})))
	}
	must(b, g.AddLambdaNode("join", compose.InvokableLambda(func(_ context.Context, in map[string]int) (int, error) {
		sum := 0
		for _, v := range in {
			sum += v
		}
		return sum, nil
	})))
	must(b, g.AddEdge(compose.START, "source"))
	for i := range n {
		must(b, g.AddEdge("source", worker(i)))
		must(b, g.AddEdge(worker(i), "join"))
	}
	must(b, g.AddEdge("join", compose.END))
	r, err := g.Compile(ctx, compose.WithNodeTriggerMode(compose.AllPredecessor))
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		got, err := r.Invoke(ctx, 0)
		must(b, err)
		check(b, "eino", got, n)
	}
}
