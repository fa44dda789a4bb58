package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
)

// handoffAgent is a subgraph that works, then hands over to the parent's
// node "to" with an update.
func handoffAgent(t *testing.T, c *counter, log *graph.Key[[]string], to string) *graph.Graph {
	b := graph.New(log)
	b.AddNode("work", func(context.Context, graph.State) (graph.Output, error) {
		c.add("work")
		return graph.Writes(graph.Append(log, "A:work")), nil
	})
	b.AddNode("handoff", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Command{Parent: true, Goto: []graph.Target{graph.To(to)}, Update: graph.Writes(graph.Append(log, "handoff"))}, nil
	})
	b.AddNode("never", logNode(log, "never"))
	b.SetEntry("work")
	b.AddEdge("work", "handoff")
	b.AddEdge("handoff", "never")
	b.AddEdge("never", graph.END)
	return mustCompile(t, b)
}

// A node in a subgraph routes to a node of its parent and updates the
// parent's state; the same through a graph invoked from a node.
func TestCommandToParent(t *testing.T) {
	for _, via := range []string{"subgraph", "invoke"} {
		t.Run(via, func(t *testing.T) {
			var c counter
			log := graph.NewKey("log", graph.Concat[string]())
			agentA := handoffAgent(t, &c, log, "agentB")
			b := graph.New(log)
			if via == "subgraph" {
				b.AddSubgraph("agentA", agentA, graph.Destinations("agentB"))
			} else {
				b.AddNode("agentA", func(ctx context.Context, s graph.State) (graph.Output, error) {
					_, err := agentA.Invoke(ctx, nil)
					return nil, err // a parent command comes back as the error
				}, graph.Destinations("agentB"))
			}
			b.AddNode("agentB", logNode(log, "B"))
			b.SetEntry("agentA")
			b.AddEdge("agentB", graph.END)
			res, err := mustCompile(t, b).Invoke(context.Background(), nil, threadOpts(checkpoint.NewMemory(), "handoff")...)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"A:work", "handoff", "B"}
			if via == "invoke" {
				want = []string{"handoff", "B"} // a plain node returns only the command's update
			}
			if d := cmp.Diff(want, log.Get(res.State)); d != "" {
				t.Errorf("log (-want +got):\n%s", d)
			}
		})
	}
}

// The subgraph node that finished by a parent command keeps its writes and
// goto as pending writes: after its step fails and resumes (on SQLite), the
// subgraph does not run again and the goto target runs.
func TestCommandToParentSurvivesAFailedStep(t *testing.T) {
	saver, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { saver.Close() })
	var c counter
	var failing atomic.Bool
	failing.Store(true)
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	b.AddSubgraph("agentA", handoffAgent(t, &c, log, "agentB"), graph.Destinations("agentB"))
	b.AddNode("flaky", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		if failing.Load() {
			// Fail only once agentA's handoff is saved: a sibling still
			// running when the step fails may run again, by design.
			waitForFinishedTask(ctx, saver, "handoff")
			return nil, errors.New("flaky")
		}
		return graph.Writes(graph.Append(log, "flaky")), nil
	})
	b.AddNode("agentB", logNode(log, "B"))
	b.AddEdge(graph.START, "agentA")
	b.AddEdge(graph.START, "flaky")
	b.AddEdge("flaky", graph.END)
	b.AddEdge("agentB", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(saver, "handoff")
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("no error")
	}
	failing.Store(false)
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"A:work", "B", "flaky", "handoff"}, sortedLog(res.State, log)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	if c.get("work") != 1 {
		t.Errorf("the subgraph's work ran %d times, want once", c.get("work"))
	}
}

// waitForFinishedTask polls the thread's latest checkpoint until a task
// has saved its finished writes, for at most five seconds.
func waitForFinishedTask(ctx context.Context, saver checkpoint.Saver, thread string) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if tup, err := saver.Get(ctx, checkpoint.Ref{ThreadID: thread}); err == nil {
			for _, w := range tup.Writes {
				if w.Key == checkpoint.WriteGoto {
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A Command for the parent graph from a node of the root graph fails the
// run with a *ParentCommandError that carries the command (as LangGraph
// raises its ParentCommand from the root), so a sub-agent graph run on its
// own shows where it tried to hand off; inside a parent, at any depth, the
// same graph hands off. Every durability mode.
func TestParentCommandAtTheTop(t *testing.T) {
	eachDepthAndMode(t, func(t *testing.T, depth int, mode graph.Durability) {
		var c counter
		log := graph.NewKey("log", graph.Concat[string]())
		g := handoffAgent(t, &c, log, "agentB")
		if depth > 0 {
			b := graph.New(log)
			b.AddSubgraph("agentA", g, graph.Destinations("agentB"))
			b.AddNode("agentB", logNode(log, "B"))
			b.SetEntry("agentA")
			b.AddEdge("agentB", graph.END)
			g, _ = atDepth(t, mustCompile(t, b), depth-1, log)
		}
		run := append(threadOpts(checkpoint.NewMemory(), "top"), graph.WithDurability(mode))
		res, err := g.Invoke(context.Background(), nil, run...)
		if depth > 0 {
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"A:work", "handoff", "B"}, log.Get(res.State)); d != "" {
				t.Errorf("log (-want +got):\n%s", d)
			}
			return
		}
		var pc *graph.ParentCommandError
		if !errors.As(err, &pc) {
			t.Fatalf("err = %v (%T), want a *ParentCommandError", err, err)
		}
		if pc.Namespace != "" || pc.Node != "handoff" || len(pc.Command.Goto) != 1 || pc.Command.Goto[0].Node() != "agentB" || !pc.Command.Parent {
			t.Errorf("error = %+v", pc)
		}
		if len(pc.Command.Update) != 1 || pc.Command.Update[0].String() != "set log [handoff]" {
			t.Errorf("the command's update = %v", pc.Command.Update)
		}
		if res == nil || res.Status != graph.StatusFailed || !cmp.Equal(log.Get(res.State), []string{"A:work"}) {
			t.Errorf("result = %+v", res)
		}
		// The stream ends with the same error.
		var last error
		for _, err := range g.Stream(context.Background(), nil, append(threadOpts(checkpoint.NewMemory(), "top2"), graph.WithDurability(mode))...) {
			last = err
		}
		if !errors.As(last, &pc) || pc.Command.Goto[0].Node() != "agentB" {
			t.Errorf("stream error = %v", last)
		}
	})
}
