package graph

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// noStalls makes the stall check wait an hour and a task slow only after
// an hour, for the test's duration: a loaded machine that leaves a worker
// unscheduled for a while cannot add workers to a step of quick tasks.
func noStalls(t *testing.T) {
	tick, slow := stallTick, slowTask
	stallTick, slowTask = time.Hour, time.Hour
	t.Cleanup(func() { stallTick, slowTask = tick, slow })
}

// quickFanout is a graph of n parallel tasks fed by START; each calls
// during(), then adds 1 to the sum.
func quickFanout(t testing.TB, n int, during func()) (*Graph, *Key[int]) {
	sum := NewKey("sum", Sum[int]())
	out := Output(Writes(sum.Set(1)))
	b := New(sum)
	for i := range n {
		name := fmt.Sprint("w", i)
		b.AddNode(name, func(context.Context, State) (Output, error) {
			during()
			return out, nil
		})
		b.AddEdge(START, name)
		b.AddEdge(name, END)
	}
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g, sum
}

// TestParallelWorkers checks that a step of quick tasks runs on at most
// GOMAXPROCS goroutines: each node yields its processor midway, which with
// a goroutine per task lets the next task start while it is still
// running.
func TestParallelWorkers(t *testing.T) {
	noStalls(t)
	const n = 64
	var running, peak atomic.Int64
	g, sum := quickFanout(t, n, func() {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		runtime.Gosched()
		runtime.Gosched()
		running.Add(-1)
	})
	for range 5 {
		res, err := g.Invoke(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Get(res.State); got != n {
			t.Fatalf("sum = %d, want %d", got, n)
		}
	}
	if p, max := peak.Load(), int64(runtime.GOMAXPROCS(0)); p > max {
		t.Fatalf("%d quick tasks ran at once, want at most GOMAXPROCS = %d", p, max)
	}
}

// TestParallelSlowNodes checks that a node whose tasks block is marked
// slow, so its next step starts every task at once instead of waiting for
// the stall check (which this test rules out), and that the mark goes when
// its tasks are quick again.
func TestParallelSlowNodes(t *testing.T) {
	noStalls(t)
	slowTask = time.Millisecond
	const n = 8
	var running, peak atomic.Int64
	var sleep atomic.Bool
	sleep.Store(true)
	g, sum := quickFanout(t, n, func() {
		now := running.Add(1)
		for {
			p := peak.Load()
			if now <= p || peak.CompareAndSwap(p, now) {
				break
			}
		}
		if sleep.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		running.Add(-1)
	})
	invoke := func() int64 {
		t.Helper()
		peak.Store(0)
		res, err := g.Invoke(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Get(res.State); got != n {
			t.Fatalf("sum = %d, want %d", got, n)
		}
		return peak.Load()
	}
	procs := int64(runtime.GOMAXPROCS(0))
	if p := invoke(); p > procs {
		t.Fatalf("first run: %d tasks at once, want at most GOMAXPROCS = %d (no node is marked slow yet)", p, procs)
	}
	if p := invoke(); p != n {
		t.Fatalf("second run: %d tasks at once, want all %d (their node blocked for 20 ms last time)", p, n)
	}
	sleep.Store(false)
	slowTask = time.Hour // every task is quick now, however loaded the machine
	invoke()             // clears the marks
	sleep.Store(true)
	if p := invoke(); p > procs {
		t.Fatalf("after a quick run: %d tasks at once, want at most GOMAXPROCS = %d (the marks should be gone)", p, procs)
	}
}
