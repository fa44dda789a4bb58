//go:build !race

// Allocation counts differ under the race detector.

package planexec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// TestEventsCostNothingWithoutListener: the agent's events (a step
// started, checked, delivered...) are built and boxed for the stream only
// when someone streams custom events. A run with such a listener allocates
// at least once more per event it receives than the same run without one;
// when the events were boxed regardless, the two counts were nearly equal.
func TestEventsCostNothingWithoutListener(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	g, err := planexec.New(planexec.Config{Model: replies20(t), PlanMode: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	opts := func() []graph.RunOption {
		i++
		return []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(fmt.Sprint("t", i))}
	}
	quiet := testing.AllocsPerRun(5, func() {
		res, err := g.Invoke(ctx, planexec.Input("go"), opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(planexec.Steps.Get(res.State)); n != 20 {
			t.Fatalf("%d steps finished; want 20", n)
		}
	})
	events := 0
	listened := testing.AllocsPerRun(5, func() {
		events = 0
		for ev, err := range g.Stream(ctx, planexec.Input("go"), append(opts(), graph.WithEvents(graph.EventCustom))...) {
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := planexec.EventFrom(ev); ok {
				events++
			}
		}
	})
	if events < 40 { // at least a start and a result per step
		t.Fatalf("a listener received %d agent events, want at least 40", events)
	}
	if extra := listened - quiet; extra < float64(events) {
		t.Errorf("a run allocates %.0f times without a listener and %.0f with one receiving %d events: "+
			"events are built or boxed when nobody listens", quiet, listened, events)
	}
}
