package graph_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// nestedPair is an outer one-node graph whose node invokes an inner
// one-node graph (which emits a custom event, and interrupts when ask is
// set), recording what the node's queries answered before the nested run.
type nestedPair struct {
	outer *graph.Graph
	kinds graph.EventKind
	fresh []bool // FreshNamespace before and after the nested run
}

func newNestedPair(t *testing.T, ask bool, opts ...graph.NodeOption) *nestedPair {
	t.Helper()
	out := graph.NewKey[string]("out")
	inner := graph.New(out)
	inner.AddNode("inner", func(ctx context.Context, s graph.State) (graph.Output, error) {
		graph.Emit(ctx, "inside")
		if ask {
			if _, err := graph.Interrupt[string](ctx, "question"); err != nil {
				return nil, err
			}
		}
		return graph.Writes(out.Set("done")), nil
	})
	inner.SetEntry("inner")
	inner.AddEdge("inner", graph.END)
	ig := mustCompile(t, inner)
	p := &nestedPair{}
	b := graph.New(out)
	b.AddNode("outer", func(ctx context.Context, s graph.State) (graph.Output, error) {
		p.kinds = graph.NestedEvents(ctx)
		p.fresh = append(p.fresh, graph.FreshNamespace(ctx))
		res, err := ig.Invoke(ctx, graph.Update{})
		p.fresh = append(p.fresh, graph.FreshNamespace(ctx))
		if err != nil {
			return nil, err
		}
		return graph.Writes(out.Set(out.Get(res.State))), nil
	}, opts...)
	b.SetEntry("outer")
	b.AddEdge("outer", graph.END)
	p.outer = mustCompile(t, b)
	return p
}

// WithoutSubgraphEvents keeps a nested run's events off the stream, but
// its interrupts, and NestedEvents tells the node so.
func TestWithoutSubgraphEvents(t *testing.T) {
	kinds := graph.EventCustom | graph.EventTasks | graph.EventInterrupt
	run := func(drop bool) (namespaced, interrupts []string, nested graph.EventKind) {
		p := newNestedPair(t, true)
		opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"), graph.WithEvents(kinds)}
		if drop {
			opts = append(opts, graph.WithoutSubgraphEvents())
		}
		for ev, err := range p.outer.Stream(context.Background(), graph.Update{}, opts...) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == graph.EventInterrupt {
				interrupts = append(interrupts, describe(ev))
			} else if ev.Namespace != "" {
				namespaced = append(namespaced, describe(ev))
			}
		}
		return namespaced, interrupts, p.kinds
	}
	all, allInterrupts, allKinds := run(false)
	none, noneInterrupts, noneKinds := run(true)
	if !slices.Contains(all, "custom 1 inner inside @outer") {
		t.Errorf("without the option, the nested run's events were %q; want its custom event among them", all)
	}
	if len(none) != 0 {
		t.Errorf("with WithoutSubgraphEvents the stream had the nested run's events %q", none)
	}
	if len(allInterrupts) == 0 {
		t.Fatal("the nested run's interrupt reached no one")
	}
	if d := cmp.Diff(allInterrupts, noneInterrupts); d != "" {
		t.Errorf("interrupts (-all +without subgraph events):\n%s", d)
	}
	if allKinds != kinds || noneKinds != graph.EventInterrupt {
		t.Errorf("NestedEvents: %v with subgraph events, %v without; want %v and %v", allKinds, noneKinds, kinds, graph.EventInterrupt)
	}
}

// NestedEvents is 0 for an Invoke, which streams nothing, and outside a node.
func TestNestedEventsOfAnInvoke(t *testing.T) {
	p := newNestedPair(t, false)
	if _, err := p.outer.Invoke(context.Background(), graph.Update{}); err != nil {
		t.Fatal(err)
	}
	if p.kinds != 0 {
		t.Errorf("NestedEvents in an Invoke: %v; want 0", p.kinds)
	}
	if k := graph.NestedEvents(context.Background()); k != 0 {
		t.Errorf("NestedEvents outside a node: %v; want 0", k)
	}
}

// FreshNamespace holds for a task's first attempt before its first nested
// run (and asking does not use it up), not after it, not for a retry, and
// always in a run without a checkpointer; never outside a node.
func TestFreshNamespace(t *testing.T) {
	saved := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")}
	p := newNestedPair(t, false)
	if _, err := p.outer.Invoke(context.Background(), graph.Update{}, saved...); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bool{true, false}, p.fresh); d != "" {
		t.Errorf("FreshNamespace before and after a nested run (-want +got):\n%s", d)
	}

	p = newNestedPair(t, false)
	if _, err := p.outer.Invoke(context.Background(), graph.Update{}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bool{true, true}, p.fresh); d != "" {
		t.Errorf("FreshNamespace without a checkpointer (-want +got):\n%s", d)
	}

	// A task that fails once: its retry's namespace may hold what the
	// first attempt saved.
	var calls atomic.Int32
	out := graph.NewKey[string]("out")
	b := graph.New(out)
	var fresh []bool
	b.AddNode("flaky", func(ctx context.Context, s graph.State) (graph.Output, error) {
		fresh = append(fresh, graph.FreshNamespace(ctx))
		if calls.Add(1) == 1 {
			return nil, errors.New("once")
		}
		return graph.Writes(out.Set("ok")), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Nanosecond, RetryOn: func(error) bool { return true }}))
	b.SetEntry("flaky")
	b.AddEdge("flaky", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), graph.Update{}, saved...); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bool{true, false}, fresh); d != "" {
		t.Errorf("FreshNamespace on a task's first attempt and its retry (-want +got):\n%s", d)
	}
	if graph.FreshNamespace(context.Background()) {
		t.Error("FreshNamespace outside a node: true; want false")
	}
}

// noopObserver observes nothing: its presence is what Observing reports.
type noopObserver struct{}

func (noopObserver) Start(ctx context.Context, op graph.Op) (context.Context, func(graph.OpEnd)) {
	return ctx, func(graph.OpEnd) {}
}

// Observing says whether the run has an observer.
func TestObserving(t *testing.T) {
	var seen []bool
	k := graph.NewKey[string]("k")
	b := graph.New(k)
	b.AddNode("n", func(ctx context.Context, s graph.State) (graph.Output, error) {
		seen = append(seen, graph.Observing(ctx))
		return nil, nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g := mustCompile(t, b)
	for _, opts := range [][]graph.RunOption{nil, {graph.WithObserver(noopObserver{})}} {
		if _, err := g.Invoke(context.Background(), graph.Update{}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff([]bool{false, true}, seen); d != "" {
		t.Errorf("Observing without and with an observer (-want +got):\n%s", d)
	}
	if graph.Observing(context.Background()) {
		t.Error("Observing outside a node: true; want false")
	}
}
