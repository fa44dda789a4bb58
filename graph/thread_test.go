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

func TestGetStateShowsPendingTasksAndInterrupts(t *testing.T) {
	var c counter
	g := parallelGraph(t, &c)
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "state")
	if _, err := g.Invoke(context.Background(), nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	s, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Next lists only what still has to run: the worker finished.
	if d := cmp.Diff([]string{"asker1", "asker2"}, s.Next); d != "" {
		t.Errorf("next (-want +got):\n%s", d)
	}
	var finished []string
	for _, ts := range s.Tasks {
		if ts.Finished {
			finished = append(finished, ts.Node)
		}
	}
	if !cmp.Equal(finished, []string{"worker"}) || len(s.Interrupts) != 2 {
		t.Errorf("finished %v, interrupts %+v", finished, s.Interrupts)
	}
	if s.Metadata.Source != checkpoint.SourceInput || s.Checkpoint.ThreadID != "state" {
		t.Errorf("metadata %+v, ref %+v", s.Metadata, s.Checkpoint)
	}
	if _, err := g.GetState(context.Background(), threadOpts(saver, "no-such-thread")...); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("missing thread: err = %v", err)
	}
}

func TestHistory(t *testing.T) {
	b, log := chainAB()
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "hist")
	if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(log, "in")), opts...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for s, err := range g.History(context.Background(), checkpoint.ListOptions{}, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(log.Get(s.Values), ",")+" next="+strings.Join(s.Next, ","))
	}
	want := []string{"in,a,b next=", "in,a next=b", "in next=a", " next=__start__"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	n := 0
	for s, err := range g.History(context.Background(), checkpoint.ListOptions{Filter: map[string]string{"source": "input"}}, opts...) {
		if err != nil || s.Metadata.Step != -1 {
			t.Fatalf("filtered: %v %+v", err, s.Metadata)
		}
		n++
	}
	if n != 1 {
		t.Errorf("filter by source matched %d snapshots", n)
	}
}

// UpdateState as a node decides what runs next from that node's edges;
// without a node it keeps what was next.
func TestUpdateState(t *testing.T) {
	b, log := chainAB()
	g := mustCompile(t, b)
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "upd")
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithInterruptBefore("b"))...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	ref, err := g.UpdateState(context.Background(), graph.Writes(graph.Append(log, "edited")), "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint.ID != ref.ID || s.Metadata.Source != checkpoint.SourceUpdate || !cmp.Equal(s.Next, []string{"b"}) {
		t.Errorf("after update: ref %s source %s next %v", s.Checkpoint.ID, s.Metadata.Source, s.Next)
	}
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "edited", "b"}, log.Get(res.State)); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	// As node "a": its edge schedules b again.
	if _, err := g.UpdateState(context.Background(), graph.Writes(graph.Append(log, "again")), "a", opts...); err != nil {
		t.Fatal(err)
	}
	res, err = g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "edited", "b", "again", "b"}, log.Get(res.State)); d != "" {
		t.Errorf("log after update as a (-want +got):\n%s", d)
	}
	if _, err := g.UpdateState(context.Background(), nil, "nope", opts...); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown node: err = %v", err)
	}
}

// Replay from an earlier checkpoint runs only the steps after it; fork from
// it starts a new branch and leaves the old one as it was.
func TestReplayAndFork(t *testing.T) {
	var c counter
	log := graph.NewKey("log", graph.Concat[string]())
	b := graph.New(log)
	for _, n := range []string{"a", "b"} {
		b.AddNode(n, func(context.Context, graph.State) (graph.Output, error) {
			c.add(n)
			return graph.Writes(graph.Append(log, n)), nil
		})
	}
	b.SetEntry("a")
	b.AddEdge("a", "b")
	b.AddEdge("b", graph.END)
	g := mustCompile(t, b)
	saver := checkpoint.NewMemory()
	opts := threadOpts(saver, "replay")
	if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(log, "in")), opts...); err != nil {
		t.Fatal(err)
	}
	hist := listAll(t, saver, "replay") // newest first: after b, after a, input
	afterA := hist[1].Ref.ID
	oldLatest := hist[0].Ref.ID

	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithCheckpointID(afterA))...)
	if err != nil {
		t.Fatal(err)
	}
	if c.get("a") != 1 || c.get("b") != 2 || !cmp.Equal(log.Get(res.State), []string{"in", "a", "b"}) {
		t.Errorf("replay: a %d b %d log %v", c.get("a"), c.get("b"), log.Get(res.State))
	}
	// The replay starts a branch: a fork point copying afterA, then b's step.
	replayed, err := saver.Get(context.Background(), res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	forkPoint, err := saver.Get(context.Background(), checkpoint.Ref{ThreadID: "replay", ID: replayed.Metadata.Parent})
	if err != nil || forkPoint.Metadata.Source != checkpoint.SourceFork || forkPoint.Metadata.Parent != afterA || forkPoint.Metadata.Step != hist[1].Metadata.Step {
		t.Fatalf("replayed checkpoint's parent = %+v (err %v), want a fork of %s at its step", forkPoint, err, afterA)
	}

	ref, err := g.UpdateState(context.Background(), graph.Writes(graph.Append(log, "forked")), "a", append(opts, graph.WithCheckpointID(afterA))...)
	if err != nil {
		t.Fatal(err)
	}
	fork, err := saver.Get(context.Background(), ref)
	if err != nil || fork.Metadata.Source != checkpoint.SourceFork || fork.Metadata.Parent != afterA {
		t.Fatalf("fork: %+v err %v", fork, err)
	}
	res, err = g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"in", "a", "forked", "b"}, log.Get(res.State)); d != "" {
		t.Errorf("forked branch (-want +got):\n%s", d)
	}
	old, err := g.GetState(context.Background(), append(opts, graph.WithCheckpointID(oldLatest))...)
	if err != nil || !cmp.Equal(log.Get(old.Values), []string{"in", "a", "b"}) {
		t.Errorf("old branch changed: %v, err %v", log.Get(old.Values), err)
	}
}

func TestSubgraphStateNested(t *testing.T) {
	sb := graph.New(sharedLog)
	sb.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		_, err := graph.Interrupt[string](ctx, "?")
		return nil, err
	})
	sb.SetEntry("ask")
	sb.AddEdge("ask", graph.END)
	b := graph.New(sharedLog)
	b.AddSubgraph("inner", mustCompile(t, sb))
	b.SetEntry("inner")
	b.AddEdge("inner", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "nested-state")
	if _, err := g.Invoke(context.Background(), nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatal(err)
	}
	s, err := g.GetState(context.Background(), append(opts, graph.WithSubgraphStates())...)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Subgraphs) != 1 {
		t.Fatalf("subgraphs = %v", s.Subgraphs)
	}
	for ns, sub := range s.Subgraphs {
		if !strings.HasPrefix(ns, "inner:") || !cmp.Equal(sub.Next, []string{"ask"}) || len(sub.Interrupts) != 1 {
			t.Errorf("subgraph %s: next %v interrupts %+v", ns, sub.Next, sub.Interrupts)
		}
	}
}
