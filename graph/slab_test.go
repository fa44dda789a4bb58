package graph_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// TestPathTaskIDs checks that Result.Path's IDs, finished on demand from
// each step's prefix, are the IDs the tasks ran with (as their task-end
// events show), for edge-triggered, parallel and Send tasks, with and
// without a checkpointer, at the root and in a subgraph's namespace.
func TestPathTaskIDs(t *testing.T) {
	n := graph.NewKey("n", graph.Sum[int]())
	add := func(context.Context, graph.State) (graph.Output, error) { return graph.Writes(n.Set(1)), nil }
	inner := graph.New(n)
	inner.AddNode("i1", add)
	inner.AddNode("i2", add)
	inner.AddEdge(graph.START, "i1")
	inner.AddEdge("i1", "i2")
	inner.AddEdge("i2", graph.END)
	sub := mustCompile(t, inner)

	b := graph.New(n)
	b.AddNode("a", add)
	b.AddNode("b", add)
	b.AddNode("c", add)
	b.AddSubgraph("s", sub)
	graph.AddSendNode(b, "w", func(_ context.Context, _ graph.State, k int) (graph.Output, error) {
		return graph.Writes(n.Set(k)), nil
	})
	b.AddEdge(graph.START, "a")
	b.AddEdge("a", "b")
	b.AddEdge("a", "c")
	b.AddFanout("b", func(context.Context, graph.State) ([]graph.Target, error) {
		return []graph.Target{graph.Send("w", 10), graph.Send("w", 20)}, nil
	}, "w")
	b.AddEdge("c", "s")
	b.AddEdge("s", graph.END)
	b.AddEdge("w", graph.END)
	g := mustCompile(t, b)

	for _, saver := range []bool{false, true} {
		t.Run(fmt.Sprint("saver=", saver), func(t *testing.T) {
			var opts []graph.RunOption
			if saver {
				opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
			}
			opts = append(opts, graph.WithEvents(graph.EventTaskEnd))
			ran := map[string][]string{} // "node step" -> task IDs
			for ev, err := range g.Stream(context.Background(), graph.Writes(), opts...) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Kind == graph.EventTaskEnd && ev.Namespace == "" {
					k := fmt.Sprint(ev.Node, " ", ev.Step)
					ran[k] = append(ran[k], ev.TaskID)
				}
			}
			if saver {
				opts[1] = graph.WithThread("t2") // a thread of its own
			}
			res, err := g.Invoke(context.Background(), graph.Writes(), opts[:len(opts)-1]...)
			if err != nil {
				t.Fatal(err)
			}
			if !saver {
				// without a checkpointer IDs do not depend on checkpoint IDs,
				// so the Stream's and the Invoke's runs agree task by task;
				// parallel tasks of one step (the two sends) end in either
				// order, so each step's IDs are compared as a set
				got := map[string][]string{}
				for _, p := range res.Path {
					k := fmt.Sprint(p.Node, " ", p.Step)
					got[k] = append(got[k], p.TaskID())
				}
				for _, ids := range ran {
					slices.Sort(ids)
				}
				for _, ids := range got {
					slices.Sort(ids)
				}
				if fmt.Sprint(got) != fmt.Sprint(ran) {
					t.Errorf("path IDs %v, want the events' %v", got, ran)
				}
			}
			seen := map[string]bool{}
			for _, p := range res.Path {
				id := p.TaskID()
				if len(id) != 32 || seen[id] {
					t.Errorf("path entry %s step %d has ID %q (empty, malformed or repeated)", p.Node, p.Step, id)
				}
				seen[id] = true
			}
			if got := n.Get(res.State); got != 1+1+1+2+30 {
				t.Errorf("n = %d, want 35", got)
			}
		})
	}
}

// TestPathTaskIDsMatchCheckpoint checks a path ID against the ID a
// checkpoint saved for the task, with a checkpointer (the IDs then hash
// the checkpoint each step started from).
func TestPathTaskIDsMatchCheckpoint(t *testing.T) {
	n := graph.NewKey("n", graph.Sum[int]())
	b := graph.New(n)
	for _, name := range []string{"a", "b", "c"} {
		b.AddNode(name, func(context.Context, graph.State) (graph.Output, error) { return graph.Writes(n.Set(1)), nil })
	}
	b.AddEdge(graph.START, "a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", graph.END)
	g := mustCompile(t, b)
	mem := checkpoint.NewMemory()
	ctx := context.Background()
	res, err := g.Invoke(ctx, graph.Writes(), graph.WithCheckpointer(mem), graph.WithThread("t"), graph.WithInterruptBefore("c"))
	if err != nil && !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	tup, err := mem.Get(ctx, res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if len(tup.Checkpoint.Next) != 1 {
		t.Fatalf("the checkpoint lists %d next tasks, want 1", len(tup.Checkpoint.Next))
	}
	res2, err := g.Invoke(ctx, nil, graph.WithCheckpointer(mem), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	last := res2.Path[len(res2.Path)-1]
	if last.Node != "c" || last.TaskID() != tup.Checkpoint.Next[0].ID {
		t.Errorf("path ends with %s %s, want c %s (the ID the checkpoint saved)", last.Node, last.TaskID(), tup.Checkpoint.Next[0].ID)
	}
}

// TestCommittedTasksReleaseWrites checks that contexts nodes keep do not
// keep the run's old values alive: tasks come from slabs, and each task is
// its node's context, so a kept context kept every task of its slab, and
// their writes, alive.
func TestCommittedTasksReleaseWrites(t *testing.T) {
	type blob [1 << 14]byte
	doc := graph.NewKey[*blob]("doc")
	const n = 40
	var written [n]weak.Pointer[blob]
	var kept [n]context.Context
	b := graph.New(doc)
	prev := graph.START
	for i := range n {
		name := fmt.Sprint("n", i)
		b.AddNode(name, func(ctx context.Context, _ graph.State) (graph.Output, error) {
			v := new(blob)
			written[i] = weak.Make(v)
			kept[i] = ctx // every node keeps its context
			return graph.Writes(doc.Set(v)), nil
		})
		b.AddEdge(prev, name)
		prev = name
	}
	b.AddEdge(prev, graph.END)
	g := mustCompile(t, b, graph.WithStepLimit(n+1))
	for range 2 { // the second run's slabs are sized by the first's
		if _, err := g.Invoke(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	// The last few values may stay: the final state's slab holds a few
	// states (maxValGens), and the run keeps its final state.
	alive := 0
	for i := range n - 8 {
		if written[i].Value() != nil {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of the first %d nodes' values are still alive after the run, held through the contexts the nodes kept", alive, n-8)
	}
	runtime.KeepAlive(&kept)
}

// TestPooledBuffersAfterFailure runs a join graph whose run fails after
// some of the join's sources finished, then runs it again: the second run
// must not see the first's join flags or run counts (its buffers come
// from the same pool).
func TestPooledBuffersAfterFailure(t *testing.T) {
	n := graph.NewKey("n", graph.Sum[int]())
	var fail atomic.Bool
	b := graph.New(n)
	add := func(context.Context, graph.State) (graph.Output, error) { return graph.Writes(n.Set(1)), nil }
	b.AddNode("src", add)
	b.AddNode("x", add)
	b.AddNode("y", add)
	b.AddNode("y2", func(context.Context, graph.State) (graph.Output, error) {
		if fail.Load() {
			return nil, errors.New("boom")
		}
		return graph.Writes(n.Set(1)), nil
	})
	b.AddNode("join", add)
	b.AddEdge(graph.START, "src")
	b.AddEdge("src", "x")
	b.AddEdge("src", "y")
	b.AddEdge("y", "y2")
	b.AddJoin("join", "x", "y2")
	b.AddEdge("join", graph.END)
	g := mustCompile(t, b)
	ctx := context.Background()
	for i := range 6 {
		fail.Store(i%2 == 0)
		res, err := g.Invoke(ctx, nil)
		if fail.Load() {
			if err == nil {
				t.Fatalf("run %d: want the node's error", i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		// src (step 1), x and y, y2, join (step 4): the join runs once,
		// after y2
		if got := n.Get(res.State); got != 5 {
			t.Errorf("run %d: n = %d, want 5", i, got)
		}
		if last := res.Path[len(res.Path)-1]; last.Node != "join" || last.Step != 4 {
			t.Errorf("run %d: the path ends with %s at step %d, want join at step 4", i, last.Node, last.Step)
		}
	}
}

// TestAddWrites checks writes a node adds through its context: applied
// ahead of those it returns, dropped when an attempt fails and is retried,
// refused outside a running node.
func TestAddWrites(t *testing.T) {
	log := graph.NewKey("log", graph.Concat[string]())
	var attempts atomic.Int32
	var kept context.Context
	b := graph.New(log)
	b.AddNode("a", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		if err := graph.AddWrites(ctx, graph.Append(log, "a1"), graph.Append(log, "a2")); err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, "a3")), nil
	})
	b.AddNode("flaky", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		n := attempts.Add(1)
		if err := graph.AddWrites(ctx, graph.Append(log, fmt.Sprint("try", n))); err != nil {
			return nil, err
		}
		if n == 1 {
			return nil, errors.New("first attempt fails")
		}
		kept = ctx
		return graph.Command{Update: graph.Writes(graph.Append(log, "cmd"))}, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond, RetryOn: func(error) bool { return true }}))
	b.AddEdge(graph.START, "a")
	b.AddEdge("a", "flaky")
	b.AddEdge("flaky", graph.END)
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(log.Get(res.State)), "[a1 a2 a3 try2 cmd]"; got != want {
		t.Errorf("log = %s, want %s", got, want)
	}
	if err := graph.AddWrites(kept, graph.Append(log, "late")); err == nil {
		t.Error("AddWrites after the node returned: want an error")
	}
	if err := graph.AddWrites(context.Background(), graph.Append(log, "x")); err == nil {
		t.Error("AddWrites outside a node: want an error")
	}
	if err := graph.AddWrites(kept, graph.Write{}); err == nil {
		t.Error("AddWrites of a zero Write: want an error")
	}
}
