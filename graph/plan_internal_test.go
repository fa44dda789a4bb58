package graph

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
)

// TestPlanChainLikePlanAll plans the step after each node's one task twice,
// through plan (which takes planChain's shortcut where it applies) and
// through planAll alone, and requires the same next tasks, marks, deferred
// nodes, spare slice and error: the shortcut is only a faster plan.
func TestPlanChainLikePlanAll(t *testing.T) {
	nop := func(context.Context, State) (Output, error) { return nil, nil }
	b := New()
	b.AddNode("a", nop)
	b.AddNode("b", nop)
	b.AddNode("c", nop)
	b.AddNode("d", nop, Deferred())
	b.AddNode("j1", nop)
	b.AddNode("j2", nop)
	b.AddNode("join", nop)
	b.AddNode("cond", nop)
	b.AddEdge(START, "a")
	b.AddEdge("a", "b")
	b.AddEdge("b", "c")
	b.AddEdge("c", "d")
	b.AddEdge("d", "j1")
	b.AddEdge("d", "j2")
	b.AddJoin("join", "j1", "j2")
	b.AddEdge("join", "cond")
	b.AddConditionalEdges("cond", func(context.Context, State) (string, error) { return "end", nil }, map[string]string{"end": END})
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		next      []string
		nextSteps []int
		marks     []int
		deferred  []int
		spare     int
		err       error
	}
	planned := func(node string, spare int, premark bool, all bool) outcome {
		r, err := g.newRun(context.Background(), nil, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		defer r.putBuffers()
		r.step = 3
		if spare > 0 {
			r.spare = make([]*task, 0, spare)
		}
		n := r.g.nodes[r.g.byName[node]]
		if premark && len(n.succ) == 1 && n.succ[0] != endIdx {
			r.b.marks[n.succ[0]] = r.step + 1
		}
		done := &task{r: r, node: n, step: r.step}
		if node == "cond" {
			done.routes = []Target{To(END)}
		}
		if all {
			err = r.planAll([]*task{done})
		} else {
			err = r.plan([]*task{done})
		}
		var o outcome
		for _, nt := range r.next {
			o.next = append(o.next, nt.node.name)
			o.nextSteps = append(o.nextSteps, nt.step, int(nt.idx))
			if nt.r != r {
				t.Errorf("%s: a next task of another run", node)
			}
		}
		o.marks = slices.Clone(r.b.marks)
		o.deferred = slices.Clone(r.deferred)
		o.spare, o.err = cap(r.spare), err
		return o
	}
	for _, node := range []string{"a", "b", "c", "d", "j1", "j2", "join", "cond"} {
		for _, spare := range []int{0, 1, 4} {
			for _, premark := range []bool{false, true} {
				got, want := planned(node, spare, premark, false), planned(node, spare, premark, true)
				if !slices.Equal(got.next, want.next) || !slices.Equal(got.nextSteps, want.nextSteps) ||
					!slices.Equal(got.marks, want.marks) || !slices.Equal(got.deferred, want.deferred) ||
					got.spare != want.spare || (got.err == nil) != (want.err == nil) {
					t.Errorf("after %s (spare %d, premarked %v): plan gave %+v, planAll %+v", node, spare, premark, got, want)
				}
			}
		}
	}
	// the shortcut is taken where it applies (a chain's plain edge)
	r, _ := g.newRun(context.Background(), nil, nil, false)
	defer r.putBuffers()
	if !r.planChain(&task{r: r, node: r.g.nodes[r.g.byName["a"]]}) {
		t.Error("planChain declined a plain edge")
	}
	for _, node := range []string{"c", "d", "j1", "cond"} { // to a deferred node, fan-out, join, conditional
		if r.planChain(&task{r: r, node: r.g.nodes[r.g.byName[node]]}) {
			t.Errorf("planChain planned the step after %s", node)
		}
	}
}

// TestAddIntDigits holds addInt to mixing what strconv.AppendInt writes,
// so task IDs stay what they were.
func TestAddIntDigits(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 999999999, 1000000000, 1 << 40, -1, -10, -(1 << 62)} {
		got, want := newFNV128(), newFNV128()
		got.addInt(n)
		mix(&want, strconv.AppendInt(nil, int64(n), 10))
		if got != want {
			t.Errorf("addInt(%d) = %x, want the hash of %q, %x", n, got, strconv.Itoa(n), want)
		}
	}
}

// TestStepPrefixFollowsCheckpointID holds the path's remembered task-ID
// prefix to idPrefix as the run's checkpoint ID changes (to one of the
// same length, too), and without buffers.
func TestStepPrefixFollowsCheckpointID(t *testing.T) {
	b := New()
	b.AddNode("a", func(context.Context, State) (Output, error) { return nil, nil })
	b.AddEdge(START, "a")
	b.AddEdge("a", END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.newRun(context.Background(), nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "0195f3a0-0000-7000-8000-000000000001", "0195f3a0-0000-7000-8000-000000000002", string([]byte("0195f3a0-0000-7000-8000-000000000002")), ""} {
		r.cpID = id
		for range 2 {
			if got, want := r.b.stepPrefix(r), r.idPrefix(); got != want {
				t.Fatalf("checkpoint ID %q: prefix %x, want %x", id, got, want)
			}
		}
	}
	r.putBuffers()
	r.cpID = "0195f3a0-0000-7000-8000-000000000003"
	if got, want := r.b.stepPrefix(r), r.idPrefix(); got != want {
		t.Fatalf("without buffers: prefix %x, want %x", got, want)
	}
}

// TestIDPrefixHashesTheThreadOnce holds idPrefix, whose thread part is
// hashed when the run takes its buffers, to the hash of the thread, the
// checkpoint ID and the namespace from scratch: with the buffers, after the
// run's thread changes, and without buffers.
func TestIDPrefixHashesTheThreadOnce(t *testing.T) {
	b := New()
	b.AddNode("a", func(context.Context, State) (Output, error) { return nil, nil })
	b.AddEdge(START, "a")
	b.AddEdge("a", END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(r *run) fnv128 {
		h := newFNV128()
		h.add(r.cfg.thread)
		mixWords(&h, r.cpID)
		h.add(r.ns)
		return h
	}
	r, err := g.newRun(context.Background(), nil, []RunOption{WithCheckpointer(checkpoint.NewMemory()), WithThread("thread-1")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.b.thrOK || r.b.thrOf != "thread-1" {
		t.Fatalf("the run's buffers hold thread %q (%v), want thread-1", r.b.thrOf, r.b.thrOK)
	}
	check := func(what string) {
		t.Helper()
		for _, id := range []string{"", "0195f3a0-0000-7000-8000-000000000001", "0195f3a0-0000-7000-8000-000000000002"} {
			r.cpID = id
			if got, want := r.idPrefix(), fresh(r); got != want {
				t.Fatalf("%s, checkpoint ID %q: prefix %x, want %x", what, id, got, want)
			}
		}
	}
	check("with buffers")
	r.ns = "sub:1"
	check("in a namespace")
	r.cfg.thread = "thread-2"
	check("another thread")
	r.cfg.thread = string([]byte("thread-1")) // equal, not the same string
	check("an equal thread")
	r.putBuffers()
	r.cfg.thread = "thread-3"
	check("without buffers")
}
