package compare

// LangGraphGo (github.com/smallnest/langgraphgo/graph) side.
//
// StateGraph with a MapSchema: the state is a map[string]any and every node
// returns a partial update that the schema merges through per-key reducers
// (LangGraph's state-channel model). The entry point plays the role of START
// and graph.END is the end node. langgraphgo runs in supersteps: all nodes
// of a step run concurrently (one goroutine per node), their updates are
// merged, then the successors of every node that ran form the next step (a
// node reached from many predecessors is de-duplicated, so it runs once,
// after all of them — the superstep barrier is langgraphgo's join).

import (
	"context"
	"testing"

	"github.com/smallnest/langgraphgo/graph"
)

func benchChainLangGraphGo(b *testing.B, n int) {
	ctx := context.Background()
	g := graph.NewStateGraph()
	schema := graph.NewMapSchema()
	schema.RegisterReducer("count", graph.OverwriteReducer)
	g.SetSchema(schema)
	inc := func(_ context.Context, state any) (any, error) {
		count := state.(map[string]any)["count"].(int)
		return map[string]any{"count": count + 1}, nil
	}
	for i := 1; i <= n; i++ {
		g.AddNode(chainNode(i), "", inc)
	}
	g.SetEntryPoint(chainNode(1))
	for i := 1; i < n; i++ {
		g.AddEdge(chainNode(i), chainNode(i+1))
	}
	g.AddEdge(chainNode(n), graph.END)
	r, err := g.Compile()
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := r.Invoke(ctx, map[string]any{"count": 0})
		must(b, err)
		check(b, "langgraphgo", out.(map[string]any)["count"].(int), n)
	}
}

// sumReducer adds integer writes to a key: every worker writes 1.
func sumReducer(current, update any) (any, error) {
	c, _ := current.(int)
	return c + update.(int), nil
}

// Fan-out: source → w0..w99 (edges from source to each worker, so they run
// in one superstep) → join (edges from every worker) → END. Each worker
// writes 1 into "sum" (sum reducer); the join reads sum and copies it to
// "result" so the check sees the value the join observed.
func benchFanoutLangGraphGo(b *testing.B, n int) {
	ctx := context.Background()
	g := graph.NewStateGraph()
	schema := graph.NewMapSchema()
	schema.RegisterReducer("sum", sumReducer)
	g.SetSchema(schema)
	g.AddNode("source", "", func(_ context.Context, _ any) (any, error) {
		return map[string]any{}, nil
	})
	for i := range n {
		g.AddNode(worker(i), "", func(_ context.Context, _ any) (any, error) {
			return map[string]any{"sum": 1}, nil
		})
	}
	g.AddNode("join", "", func(_ context.Context, state any) (any, error) {
		return map[string]any{"result": state.(map[string]any)["sum"].(int)}, nil
	})
	g.SetEntryPoint("source")
	for i := range n {
		g.AddEdge("source", worker(i))
		g.AddEdge(worker(i), "join")
	}
	g.AddEdge("join", graph.END)
	r, err := g.Compile()
	must(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := r.Invoke(ctx, map[string]any{"sum": 0})
		must(b, err)
		check(b, "langgraphgo", out.(map[string]any)["result"].(int), n)
	}
}
