//go:build !race

// Allocation counts differ under the race detector.

package graph_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// staticChain is a chain of n nodes that each add 1 to a sum key through
// an Output made once, so the node itself allocates nothing and what an
// Invoke allocates is the engine's (and its saver's).
func staticChain(t testing.TB, n int) (*graph.Graph, *graph.Key[int]) {
	sum := graph.NewKey("sum", graph.Sum[int]())
	out := graph.Output(graph.Writes(sum.Set(1)))
	b := graph.New(sum)
	prev := graph.START
	for i := range n {
		name := fmt.Sprint("n", i)
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) { return out, nil })
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	return mustCompile(t, b, graph.WithStepLimit(n+1)), sum
}

// TestStepAllocations bounds what one step of a chain allocates: with no
// saver, the task and the committed state come from slabs sized by the
// graph's last run and the run's buffers from the graph's pool, so a run
// allocates the same few times however long it is (it was two allocations
// a step, then 0.47 with doubling slabs); with the in-memory saver, the checkpoint is encoded
// into a pooled buffer and handed over without a copy (it was about 25),
// its containers are reused and Memory carves what it keeps from slabs
// (it was 10), and the checkpoint ID, task IDs and small blob data are
// carved from shared chunks (it was 4.5); the versions go to Memory as a
// slice, a checkpoint's one version and task are stored inline, and a
// key's blobs grow by chunks (it was 1.02).
func TestStepAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	const n = 64
	g, sum := staticChain(t, n)
	ctx := context.Background()
	check := func(res *graph.Result, err error) {
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Get(res.State); got != n {
			t.Fatalf("sum = %d, want %d", got, n)
		}
	}
	engine := testing.AllocsPerRun(20, func() { check(g.Invoke(ctx, nil)) }) / n
	mem := checkpoint.NewMemory()
	i := 0
	saved := testing.AllocsPerRun(20, func() {
		i++
		check(g.Invoke(ctx, nil, graph.WithCheckpointer(mem), graph.WithThread(fmt.Sprint("t", i))))
	}) / n
	t.Logf("allocations per step: %.2f with no saver, %.2f with the in-memory saver", engine, saved)
	if engine > 0.12 {
		t.Errorf("a step with no saver allocates %.2f times, want at most 0.12", engine)
	}
	if saved > 0.8 {
		t.Errorf("a step with the in-memory saver allocates %.2f times, want at most 0.8", saved)
	}
}

// TestRunAllocationsFlat checks that a chain's allocations with no saver
// do not grow with its length: a run of 128 steps allocates no more than a
// run of 16, beyond one more slab of tasks and one of states.
func TestRunAllocationsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	ctx := context.Background()
	per := func(n int) float64 {
		g, sum := staticChain(t, n)
		return testing.AllocsPerRun(20, func() {
			res, err := g.Invoke(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sum.Get(res.State); got != n {
				t.Fatalf("sum = %d, want %d", got, n)
			}
		})
	}
	short, long := per(16), per(128)
	t.Logf("allocations per run: %.0f for 16 steps, %.0f for 128", short, long)
	if long > short+2 || short > 8 {
		t.Errorf("a run allocates %.0f times for 16 steps and %.0f for 128; want at most 8, and at most 2 more for the longer run", short, long)
	}
}

// TestAddWritesAllocations checks that a node writing through AddWrites
// allocates almost nothing a step (its task's copy of the write comes from
// a shared slab; it was one allocation), and one returning
// graph.Writes(k.Set(v)) once (the Update's conversion to Output; it was
// two, with the variadic slice).
func TestAddWritesAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	const n = 64
	sum := graph.NewKey("sum", graph.Sum[int]())
	build := func(node graph.NodeFunc) *graph.Graph {
		b := graph.New(sum)
		prev := graph.START
		for i := range n {
			name := fmt.Sprint("n", i)
			b.AddNode(name, node)
			b.AddEdge(prev, name)
			prev = name
		}
		b.AddEdge(prev, graph.END)
		return mustCompile(t, b, graph.WithStepLimit(n+1))
	}
	ctx := context.Background()
	per := func(g *graph.Graph) float64 {
		return testing.AllocsPerRun(20, func() {
			res, err := g.Invoke(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sum.Get(res.State); got != n {
				t.Fatalf("sum = %d, want %d", got, n)
			}
		}) / n
	}
	added := per(build(func(ctx context.Context, _ graph.State) (graph.Output, error) {
		return nil, graph.AddWrites(ctx, sum.Set(1))
	}))
	returned := per(build(func(context.Context, graph.State) (graph.Output, error) {
		return graph.Writes(sum.Set(1)), nil
	}))
	t.Logf("allocations per step: %.2f with AddWrites, %.2f returning Writes", added, returned)
	if added > 0.2 {
		t.Errorf("a step whose node uses AddWrites allocates %.2f times, want at most 0.2", added)
	}
	if returned > 1.2 {
		t.Errorf("a step whose node returns Writes allocates %.2f times, want at most 1.2", returned)
	}
}

// TestWritesChainAllocations checks the ordinary node of a chain: it
// returns graph.Writes with two writes of small values (a sum and a flag),
// and the step costs the Update's conversion to Output and little more.
// Writes copies writes like these into a shared slab, so the variadic
// slice stays on the node's stack (it was 2.1 allocations a step).
func TestWritesChainAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	const n = 64
	sum := graph.NewKey("sum", graph.Sum[int]())
	flag := graph.NewKey[bool]("flag")
	b := graph.New(sum, flag)
	prev := graph.START
	for i := range n {
		name := fmt.Sprint("n", i)
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(sum.Set(1), flag.Set(i%2 == 0)), nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g := mustCompile(t, b, graph.WithStepLimit(n+1))
	ctx := context.Background()
	per := testing.AllocsPerRun(20, func() {
		res, err := g.Invoke(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Get(res.State); got != n {
			t.Fatalf("sum = %d, want %d", got, n)
		}
		if flag.Get(res.State) {
			t.Fatalf("flag = true, want the last node's false")
		}
	}) / n
	t.Logf("allocations per step: %.2f", per)
	if per > 1.2 {
		t.Errorf("a step whose node returns graph.Writes of two small values allocates %.2f times, want at most 1.2", per)
	}
}
