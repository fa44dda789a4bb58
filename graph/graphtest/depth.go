package graphtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// The cases below run inside a subgraph, where breakpoints, replays,
// updates, commands and remembered state cross a namespace boundary.

var trail = graph.NewKey("trail", graph.Concat[string]())

// wrap runs inner as the subgraph node "sub" of a graph sharing trail.
func wrap(t *testing.T, inner *graph.Graph, opts ...graph.NodeOption) *graph.Graph {
	b := graph.New(trail)
	b.AddSubgraph("sub", inner, opts...)
	b.SetEntry("sub")
	b.AddEdge("sub", graph.END)
	return must(t, b)
}

func sortedTrail(s graph.State) []string {
	l := slices.Clone(trail.Get(s))
	sort.Strings(l)
	return l
}

func trailNode(c *counter, name string) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Output, error) {
		c.add(name)
		return graph.Writes(graph.Append(trail, name)), nil
	}
}

func askNode(c *counter, name string) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Output, error) {
		c.add(name)
		v, err := graph.Interrupt[string](ctx, "value for "+name)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(trail, name+"="+v)), nil
	}
}

// A breakpoint inside a subgraph, named by path from the top, is listed
// and passed once by a single answer.
func testSubgraphBreakpoint(t *testing.T, e env) {
	var c counter
	b := graph.New(trail)
	b.AddNode("a", trailNode(&c, "a"))
	b.AddNode("b", trailNode(&c, "b"))
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	g := wrap(t, must(t, b))
	opts := e.opts(graph.WithInterruptBefore("sub/b"))
	res, err := g.Invoke(context.Background(), nil, opts...)
	wantInterrupted(t, res, err, 1)
	if in := res.Interrupts[0]; in.Kind != graph.InterruptBefore || in.Node != "b" {
		t.Errorf("interrupt %+v, want before b", in)
	}
	res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume("go"))...)
	if err != nil || !cmp.Equal(trail.Get(res.State), []string{"a", "b"}) || c.get("a") != 1 || c.get("b") != 1 {
		t.Errorf("trail %v err %v a %d b %d", trail.Get(res.State), err, c.get("a"), c.get("b"))
	}
}

// A replay inside the subgraph's parent that stops at the subgraph's
// interrupt is a branch: resumable, and the old branch stays as it was.
func testReplayBranch(t *testing.T, e env) {
	var c counter
	b := graph.New(trail)
	b.AddNode("ask", askNode(&c, "ask"))
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g := wrap(t, must(t, b))
	ctx := context.Background()
	_, err := g.Invoke(ctx, nil, e.opts()...)
	if !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, nil, e.opts(graph.WithResume("first"))...); err != nil {
		t.Fatal(err)
	}
	var oldest *checkpoint.Tuple
	before := map[string]*checkpoint.Tuple{}
	for tup, err := range e.saver.List(ctx, checkpoint.Ref{ThreadID: e.thread}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		before[tup.Ref.ID], oldest = tup, tup
	}
	if _, err := g.Invoke(ctx, nil, e.opts(graph.WithCheckpointID(oldest.Ref.ID))...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("replay: %v", err)
	}
	for id, tup := range before {
		got, err := e.saver.Get(ctx, checkpoint.Ref{ThreadID: e.thread, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tup.Writes, got.Writes); d != "" {
			t.Errorf("the old branch's pending writes at %s changed:\n%s", id, d)
		}
	}
	res, err := g.Invoke(ctx, nil, e.opts(graph.WithResume("second"))...)
	if err != nil || !cmp.Equal(trail.Get(res.State), []string{"ask=second"}) {
		t.Errorf("branch: trail %v err %v", trail.Get(res.State), err)
	}
}

// An update with no node keeps the subgraph's pending interrupt.
func testUpdateKeepsInterrupt(t *testing.T, e env) {
	var c counter
	b := graph.New(trail)
	b.AddNode("ask", askNode(&c, "ask"))
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g := wrap(t, must(t, b))
	ctx := context.Background()
	res, err := g.Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 1)
	if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(trail, "edit")), "", e.opts()...); err != nil {
		t.Fatal(err)
	}
	s, err := g.GetState(ctx, e.opts()...)
	if err != nil || len(s.Interrupts) != 1 || s.Interrupts[0].ID != res.Interrupts[0].ID {
		t.Fatalf("after update: %+v err %v", s.Interrupts, err)
	}
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithResume("x"))...)
	if err != nil || !cmp.Equal(sortedTrail(res.State), []string{"ask=x", "edit"}) {
		t.Errorf("trail %v err %v", trail.Get(res.State), err)
	}
}

// A command answers, updates and routes in one step.
func testCommandInput(t *testing.T, e env) {
	var c counter
	b := graph.New(trail)
	b.AddNode("ask", askNode(&c, "ask"))
	b.AddNode("extra", trailNode(&c, "extra"))
	b.AddNode("work", trailNode(&c, "work"), graph.Destinations("extra"))
	b.AddEdge(graph.START, "ask")
	b.AddEdge(graph.START, "work")
	b.AddEdge("ask", graph.END)
	b.AddEdge("work", graph.END)
	b.AddEdge("extra", graph.END)
	g := must(t, b)
	ctx := context.Background()
	res, err := g.Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 1)
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithResume("y"), graph.WithCommand(graph.Command{Update: graph.Writes(graph.Append(trail, "cmd")), Goto: []graph.Target{graph.To("extra")}}))...)
	if err != nil || !cmp.Equal(sortedTrail(res.State), []string{"ask=y", "cmd", "extra", "work"}) || c.get("work") != 1 {
		t.Errorf("trail %v err %v work %d", trail.Get(res.State), err, c.get("work"))
	}
}

// A Stateful subgraph remembers its own key across invocations, and the
// run context survives the interrupt in between.
func testStatefulAndContext(t *testing.T, e env) {
	seen := graph.NewKey("seen", graph.Concat[string]())
	b := graph.New(trail, seen)
	b.AddNode("remember", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		who, err := graph.RunContext[string](ctx)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(seen, who)), nil
	})
	b.AddNode("report", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if _, err := graph.Interrupt[string](ctx, "report?"); err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(trail, fmt.Sprint(seen.Get(s)))), nil
	})
	b.SetEntry("remember")
	b.AddEdge("remember", "report")
	b.AddEdge("report", graph.END)
	g := wrap(t, must(t, b), graph.Stateful())
	ctx := context.Background()
	for _, who := range []string{"ada", "bob"} {
		if _, err := g.Invoke(ctx, graph.Writes(), e.opts(graph.WithRunContext(who))...); !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("%s: %v", who, err)
		}
		if _, err := g.Invoke(ctx, nil, e.opts(graph.WithResume("ok"))...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := g.GetState(ctx, e.opts()...)
	if err != nil || !cmp.Equal(trail.Get(s.Values), []string{"[ada]", "[ada bob]"}) {
		t.Errorf("trail %v err %v", trail.Get(s.Values), err)
	}
}

// Removing a run (Saver.DeleteRun) that resumed a subgraph's interrupt
// leaves the thread as the earlier run left it: the interrupt waits again,
// inside the subgraph too, and a new answer goes on from there.
func testRemoveRun(t *testing.T, e env) {
	var c counter
	b := graph.New(trail)
	b.AddNode("before", trailNode(&c, "before"))
	b.AddNode("ask", askNode(&c, "ask"))
	b.SetEntry("before")
	b.AddEdge("before", "ask")
	b.AddEdge("ask", graph.END)
	g := wrap(t, must(t, b))
	ctx := context.Background()
	res, err := g.Invoke(ctx, nil, e.opts(graph.WithRunID("run-1"))...)
	wantInterrupted(t, res, err, 1)
	waiting := res.Interrupts[0].ID
	if _, err := g.Invoke(ctx, nil, e.opts(graph.WithRunID("run-2"), graph.WithResume("first"))...); err != nil {
		t.Fatal(err)
	}
	n, err := e.saver.DeleteRun(ctx, e.thread, "run-2")
	if err != nil || n == 0 {
		t.Fatalf("DeleteRun removed %d checkpoints, err %v", n, err)
	}
	s, err := g.GetState(ctx, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Interrupts) != 1 || s.Interrupts[0].ID != waiting || len(trail.Get(s.Values)) != 0 || s.Metadata.RunID != "run-1" {
		t.Fatalf("after removing run-2: interrupts %+v trail %v run %q; want run-1's waiting interrupt", s.Interrupts, trail.Get(s.Values), s.Metadata.RunID)
	}
	res, err = g.Invoke(ctx, nil, e.opts(graph.WithRunID("run-3"), graph.WithResume("second"))...)
	if err != nil || !cmp.Equal(trail.Get(res.State), []string{"before", "ask=second"}) {
		t.Errorf("run-3: trail %v err %v", trail.Get(res.State), err)
	}
	if c.get("before") != 1 {
		t.Errorf("before ran %d times, want once", c.get("before"))
	}
}
