package graph_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
)

// TestParallelBlockedSiblings runs a step whose tasks each wait until all
// of them have started: more tasks than processors, so the step's first
// workers block and the stall check must give the queued tasks goroutines
// of their own. With a fixed pool the step would never end.
func TestParallelBlockedSiblings(t *testing.T) {
	n := 4*runtime.GOMAXPROCS(0) + 1
	sum := graph.NewKey("sum", graph.Sum[int]())
	var started atomic.Int64
	all := make(chan struct{})
	b := graph.New(sum)
	for i := range n {
		name := fmt.Sprint("w", i)
		b.AddNode(name, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			if started.Add(1) == int64(n) {
				close(all)
			}
			select {
			case <-all:
				return graph.Writes(sum.Set(1)), nil
			case <-ctx.Done():
				return nil, fmt.Errorf("only %d of %d siblings started: %w", started.Load(), n, ctx.Err())
			}
		})
		b.AddEdge(graph.START, name)
		b.AddEdge(name, graph.END)
	}
	g := mustCompile(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := g.Invoke(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Get(res.State); got != n {
		t.Fatalf("sum = %d, want %d", got, n)
	}
}

// TestParallelMaxConcurrencyBlocked: the stall check never starts more
// tasks at once than WithMaxConcurrency allows.
func TestParallelMaxConcurrencyBlocked(t *testing.T) {
	const n, bound = 12, 3
	sum := graph.NewKey("sum", graph.Sum[int]())
	var running, peak atomic.Int64
	b := graph.New(sum)
	for i := range n {
		name := fmt.Sprint("w", i)
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond) // long enough for the stall check to fire
			running.Add(-1)
			return graph.Writes(sum.Set(1)), nil
		})
		b.AddEdge(graph.START, name)
		b.AddEdge(name, graph.END)
	}
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), nil, graph.WithMaxConcurrency(bound))
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Get(res.State); got != n {
		t.Fatalf("sum = %d, want %d", got, n)
	}
	if p := peak.Load(); p > bound {
		t.Fatalf("%d tasks ran at once, want at most %d (WithMaxConcurrency)", p, bound)
	}
}
