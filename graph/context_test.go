package graph_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
)

// Nodes reach the run's store through their context, and a graph invoked
// from a node inherits it.
func TestStoreFromContext(t *testing.T) {
	ns := []string{"project", "env", "agent"}
	inner := graph.New()
	inner.AddNode("save", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		return nil, store.Put(ctx, graph.StoreFrom(ctx), ns, "nested", 2, store.PutOptions{})
	})
	inner.SetEntry("save")
	inner.AddEdge("save", graph.END)
	sub := mustCompile(t, inner)

	b := graph.New()
	b.AddNode("save", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		if err := store.Put(ctx, graph.StoreFrom(ctx), ns, "top", 1, store.PutOptions{}); err != nil {
			return nil, err
		}
		_, err := sub.Invoke(ctx, nil)
		return nil, err
	})
	b.SetEntry("save")
	b.AddEdge("save", graph.END)
	st := store.NewMemory()
	if _, err := mustCompile(t, b).Invoke(context.Background(), nil, graph.WithStore(st)); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{"top": 1, "nested": 2} {
		got, err := store.Get[int](context.Background(), st, ns, key)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	if graph.StoreFrom(context.Background()) != nil {
		t.Error("StoreFrom outside a run is not nil")
	}
}

// Nodes, nested ones included, read the thread their run checkpoints under.
func TestThreadIDFromContext(t *testing.T) {
	var got []string
	inner := graph.New(answer)
	inner.AddNode("in", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		got = append(got, graph.ThreadID(ctx))
		return nil, nil
	})
	inner.SetEntry("in")
	inner.AddEdge("in", graph.END)
	b := graph.New(answer)
	b.AddSubgraph("sub", mustCompile(t, inner))
	b.SetEntry("sub")
	b.AddEdge("sub", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), nil, threadOpts(checkpoint.NewMemory(), "t-7")...); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "t-7" || got[1] != "" || graph.ThreadID(context.Background()) != "" {
		t.Errorf("thread IDs %q", got)
	}
}
