package graph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// appendCounter counts how a run saves pending writes.
type appendCounter struct {
	*checkpoint.Memory
	puts, appends, appended atomic.Int64
}

func (s *appendCounter) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, ws []checkpoint.PendingWrite) error {
	s.puts.Add(1)
	return s.Memory.PutWrites(ctx, ref, taskID, ws)
}

func (s *appendCounter) AppendWrites(ctx context.Context, ref checkpoint.Ref, taskID string, ws []checkpoint.PendingWrite) error {
	s.appends.Add(1)
	s.appended.Add(int64(len(ws)))
	return s.Memory.AppendWrites(ctx, ref, taskID, ws)
}

// Each durable step after a task's first save is one appended write, not
// a rewrite of the task's writes; what is stored restores as before.
func TestDurableStepsAppend(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			saver := &appendCounter{Memory: checkpoint.NewMemory()}
			var c counter
			fail := true
			names := []string{"s0", "s1", "s2", "s3", "s4", "s5"}
			g := stepsGraph(t, &c, &fail, names...)
			opts := append(threadOpts(saver, "t"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
				t.Fatal("the first run did not fail")
			}
			// The first step is a whole save (the task had none); the five
			// after it are one write each; the failure rewrites them all.
			if a, n := saver.appends.Load(), saver.appended.Load(); a != 5 || n != 5 {
				t.Errorf("%d appends of %d writes, want 5 of 1", a, n)
			}
			snap, err := g.GetState(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Tasks) != 1 || !cmp.Equal(snap.Tasks[0].Steps, names) {
				t.Fatalf("saved steps: %+v, want %v", snap.Tasks, names)
			}
			fail = false
			res, err := g.Invoke(context.Background(), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(trail.Get(res.State)); got != len(names) {
				t.Errorf("%d results, want %d", got, len(names))
			}
			for _, n := range names {
				if c.get(n) != 1 {
					t.Errorf("step %s ran %d times, want once", n, c.get(n))
				}
			}
		})
	}
}

// Parallel steps that finish out of call order still append: their writes
// follow the order they were saved, which a re-run restores.
func TestParallelStepsAppendOutOfOrder(t *testing.T) {
	saver := &appendCounter{Memory: checkpoint.NewMemory()}
	var c counter
	var fail atomic.Bool
	fail.Store(true)
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		// a waits for b, b for c: they finish c, b, a.
		bDone, cDone := make(chan struct{}), make(chan struct{})
		step := func(name string, after, done chan struct{}) func(context.Context) (string, error) {
			return func(context.Context) (string, error) {
				if after != nil {
					<-after
				}
				c.add(name)
				if done != nil {
					defer close(done)
				}
				return name + "!", nil
			}
		}
		var fs []*graph.Future[string]
		if fail.Load() {
			fs = []*graph.Future[string]{graph.Go(ctx, "a", step("a", bDone, nil)), graph.Go(ctx, "b", step("b", cDone, bDone)), graph.Go(ctx, "c", step("c", nil, cDone))}
		} else { // restored: none of them runs
			fs = []*graph.Future[string]{graph.Go(ctx, "a", step("a", nil, nil)), graph.Go(ctx, "b", step("b", nil, nil)), graph.Go(ctx, "c", step("c", nil, nil))}
		}
		var got []string
		for _, f := range fs {
			v, err := f.Wait(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		if fail.Load() {
			return nil, errors.New("the node fails after its steps")
		}
		return graph.Writes(graph.Append(trail, got...)), nil
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(saver, "t")
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("the first run did not fail")
	}
	if a, n := saver.appends.Load(), saver.appended.Load(); a != 2 || n != 2 {
		t.Errorf("%d appends of %d writes, want 2 of 1 (b and a after c)", a, n)
	}
	fail.Store(false)
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a!", "b!", "c!"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	for _, n := range []string{"a", "b", "c"} {
		if c.get(n) != 1 {
			t.Errorf("step %s ran %d times, want once", n, c.get(n))
		}
	}
}

// unsupported is a wrapper whose saver cannot append.
type unsupported struct{ *appendCounter }

func (s unsupported) AppendWrites(context.Context, checkpoint.Ref, string, []checkpoint.PendingWrite) error {
	s.appends.Add(1)
	return fmt.Errorf("no appends here: %w", errors.ErrUnsupported)
}

// A saver that answers errors.ErrUnsupported gets the whole writes
// instead, and the steps are saved all the same.
func TestDurableStepsAppendUnsupported(t *testing.T) {
	inner := &appendCounter{Memory: checkpoint.NewMemory()}
	saver := unsupported{inner}
	var c counter
	fail := true
	names := []string{"s0", "s1", "s2"}
	g := stepsGraph(t, &c, &fail, names...)
	opts := threadOpts(saver, "t")
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("the first run did not fail")
	}
	if a, p := inner.appends.Load(), inner.puts.Load(); a != 2 || p != 4 {
		t.Errorf("%d appends tried and %d PutWrites, want 2 and 4 (3 steps, the failure)", a, p)
	}
	fail = false
	if _, err := g.Invoke(context.Background(), nil, opts...); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if c.get(n) != 1 {
			t.Errorf("step %s ran %d times, want once", n, c.get(n))
		}
	}
}
