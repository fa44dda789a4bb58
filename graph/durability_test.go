package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

var modes = []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}

func TestDurabilityCheckpointCounts(t *testing.T) {
	// The pre-input checkpoint, then one per step; under DurabilityExit the
	// pre-input checkpoint and the last.
	want := map[graph.Durability]int{graph.DurabilitySync: 4, graph.DurabilityAsync: 4, graph.DurabilityExit: 2}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			b, log := chainAB()
			saver := checkpoint.NewMemory()
			opts := append(threadOpts(saver, "count"), graph.WithDurability(mode))
			res, err := mustCompile(t, b).Invoke(context.Background(), graph.Writes(graph.Append(log, "in")), opts...)
			if err != nil {
				t.Fatal(err)
			}
			cps := listAll(t, saver, "count")
			if len(cps) != want[mode] {
				t.Errorf("%d checkpoints, want %d", len(cps), want[mode])
			}
			if cps[0].Ref.ID != res.Checkpoint.ID || len(cps[0].Checkpoint.Next) != 0 {
				t.Errorf("latest checkpoint %s (next %d), result names %s", cps[0].Ref.ID, len(cps[0].Checkpoint.Next), res.Checkpoint.ID)
			}
			// Whatever the mode, a fresh run rebuilds the final state.
			again, err := mustCompile(t, b).Invoke(context.Background(), nil, opts...)
			if err != nil || !cmp.Equal(log.Get(again.State), []string{"in", "a", "b"}) {
				t.Errorf("rebuilt %v, err %v", log.Get(again.State), err)
			}
		})
	}
}

// Interrupts, partial answers and resume behave the same in every mode.
func TestInterruptsInEveryMode(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			g := parallelGraph(t, &c)
			opts := append(threadOpts(checkpoint.NewMemory(), "modes"), graph.WithDurability(mode))
			res, err := g.Invoke(context.Background(), nil, opts...)
			if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
				t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
			}
			answers := map[string]any{}
			for _, in := range res.Interrupts {
				answers[in.ID] = strings.ToUpper(in.Node)
			}
			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(answers))...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"asker1=ASKER1", "asker2=ASKER2", "worked"}, results.Get(res.State)); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			if c.get("worker") != 1 {
				t.Errorf("the finished worker ran %d times", c.get("worker"))
			}
		})
	}
}

// After a failure, the siblings that finished are not run again on resume.
func TestFailedStepKeepsFinishedSiblings(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			fail := true
			b := graph.New(results)
			b.AddNode("ok", func(context.Context, graph.State) (graph.Output, error) {
				c.add("ok")
				return graph.Writes(graph.Append(results, "ok")), nil
			})
			b.AddNode("flaky", func(ctx context.Context, _ graph.State) (graph.Output, error) {
				c.add("flaky")
				for c.get("ok") == 0 { // fail only after the sibling finished
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
				if fail {
					fail = false
					return nil, errors.New("flaky failed")
				}
				return graph.Writes(graph.Append(results, "flaky")), nil
			})
			for _, n := range []string{"ok", "flaky"} {
				b.AddEdge(graph.START, n)
				b.AddEdge(n, graph.END)
			}
			g := mustCompile(t, b)
			opts := append(threadOpts(checkpoint.NewMemory(), "fail"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
				t.Fatal("no failure")
			}
			res, err := g.Invoke(context.Background(), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"flaky", "ok"}, results.Get(res.State)); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			if c.get("ok") != 1 || c.get("flaky") != 2 {
				t.Errorf("ok ran %d, flaky %d; want 1 and 2", c.get("ok"), c.get("flaky"))
			}
		})
	}
}

type failingSaver struct {
	*checkpoint.Memory
	failAfter int
	puts      int
}

func (f *failingSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	f.puts++
	if f.puts > f.failAfter {
		return checkpoint.Ref{}, errors.New("disk full")
	}
	return f.Memory.Put(ctx, ref, cp, md)
}

// A write that fails in the background fails the run; nothing is lost
// silently.
func TestAsyncWriteErrorFailsTheRun(t *testing.T) {
	g := loopGraph(t, 5, nil)
	saver := &failingSaver{Memory: checkpoint.NewMemory(), failAfter: 3}
	_, err := g.Invoke(context.Background(), nil, graph.WithCheckpointer(saver), graph.WithThread("async-fail"), graph.WithDurability(graph.DurabilityAsync))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error", err)
	}
}
