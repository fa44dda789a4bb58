//go:build !race

// Allocation counts differ under the race detector.

package graph_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

// progress is a custom event larger than a word: passing it to Emit boxes
// it into an interface, one allocation.
type progress struct {
	Step, Of int
	Message  string
}

// emitGraph is a one-node graph whose node emits perRun custom events the
// way a caller that minds allocations does (checking Emitting first) and
// records what one such emit allocates.
func emitGraph(t *testing.T, perRun int, allocs *float64) *graph.Graph {
	t.Helper()
	k := graph.NewKey[int]("k", graph.LastValue[int]())
	b := graph.New(k)
	b.AddNode("n", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		i := 0
		*allocs = testing.AllocsPerRun(perRun-1, func() {
			i++
			if graph.Emitting(ctx) {
				graph.Emit(ctx, progress{Step: i, Of: perRun, Message: "working"})
			}
		})
		return nil, nil
	})
	b.AddEdge(graph.START, "n")
	b.AddEdge("n", graph.END)
	return mustCompile(t, b)
}

// TestEmitAllocationsWithoutListener: a node's custom events cost nothing
// when nobody streams them, and do reach (and allocate for) a listener.
func TestEmitAllocationsWithoutListener(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	const perRun = 20
	ctx := context.Background()
	var allocs float64
	g := emitGraph(t, perRun, &allocs)

	if _, err := g.Invoke(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("Invoke (no listener): an emit allocates %.2f times, want 0", allocs)
	}
	// Streaming without custom events: still nobody listens.
	for _, err := range g.Stream(ctx, nil, graph.WithEvents(graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if allocs != 0 {
		t.Errorf("Stream without custom events: an emit allocates %.2f times, want 0", allocs)
	}
	if graph.Emitting(ctx) {
		t.Error("Emitting outside a node = true, want false")
	}

	got := 0
	for ev, err := range g.Stream(ctx, nil, graph.WithEvents(graph.EventCustom)) {
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := ev.Custom.(progress); ok && p.Message == "working" {
			got++
		}
	}
	if got != perRun { // AllocsPerRun runs the function once more to warm up
		t.Errorf("listener received %d custom events, want %d", got, perRun)
	}
	if allocs < 1 {
		t.Errorf("with a listener an emit allocates %.2f times; the test no longer sees the boxing it guards against", allocs)
	}
}
