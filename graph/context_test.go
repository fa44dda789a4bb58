package graph_test

import (
	"context"
	"testing"

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
