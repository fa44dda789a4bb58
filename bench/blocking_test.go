package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
)

// sleepFanout is a step of n tasks that each block for d (a stand-in for a
// model or tool call), then add 1 to count.
func sleepFanout(n int, d time.Duration) *graph.Graph {
	b := graph.New(count)
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) {
			time.Sleep(d)
			return graph.Writes(count.Set(1)), nil
		})
		b.AddEdge(graph.START, name)
		b.AddEdge(name, graph.END)
	}
	g, err := b.Compile()
	if err != nil {
		panic(err)
	}
	return g
}

// FanoutSleep16 is a step of 16 tasks that each block 2 ms: its wall time
// per run is what blocking nodes pay for running on workers (the queued
// tasks start after the stall check, not at once). 2 ms is the floor.
func BenchmarkFanoutSleep16(b *testing.B) {
	run(b, shape{"FanoutSleep16", sleepFanout(16, 2*time.Millisecond), nil, 16, counted(16)}, false)
}
