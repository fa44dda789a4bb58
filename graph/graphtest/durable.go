package graphtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// testDurableSteps: two parallel nodes with durable steps of the same
// names. a charges, asks inside a step, then ships (which fails once); b
// charges and asks outside a step. Across the interrupt, a state update
// while they wait, the resume and the failure, every step that returned runs once, each task gets its own
// step results back, and the step that asked runs again only to get its
// answer.
func testDurableSteps(t *testing.T, e env) {
	var c counter
	step := func(ctx context.Context, who, name, value string) (string, error) {
		return graph.Durable(ctx, name, func(context.Context) (string, error) {
			c.add(who + "." + name)
			return value, nil
		})
	}
	b := graph.New(log)
	b.AddNode("a", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		paid, err := step(ctx, "a", "charge", "a-paid")
		if err != nil {
			return nil, err
		}
		ok, err := graph.Durable(ctx, "approve", func(ctx context.Context) (string, error) {
			c.add("a.approve")
			return graph.Interrupt[string](ctx, "approve a?")
		})
		if err != nil {
			return nil, err
		}
		shipped, err := graph.Durable(ctx, "ship", func(context.Context) (string, error) {
			c.add("a.ship")
			if c.get("a.ship") == 1 {
				return "", errors.New("the carrier is down")
			}
			return "shipped", nil
		})
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, "a:"+paid+","+ok+","+shipped)), nil
	})
	b.AddNode("b", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		paid, err := step(ctx, "b", "charge", "b-paid")
		if err != nil {
			return nil, err
		}
		ok, err := graph.Interrupt[string](ctx, "approve b?")
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, "b:"+paid+","+ok)), nil
	})
	for _, n := range []string{"a", "b"} {
		b.AddEdge(graph.START, n)
		b.AddEdge(n, graph.END)
	}
	g := must(t, b)
	ctx := context.Background()

	res, err := g.Invoke(ctx, nil, e.opts()...)
	wantInterrupted(t, res, err, 2)
	// A change to the state while the tasks wait keeps their steps.
	if _, err := g.UpdateState(ctx, graph.Writes(graph.Append(log, "edit")), "", e.opts()...); err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(ctx, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range snap.Tasks {
		if !cmp.Equal(ts.Steps, []string{"charge"}) {
			t.Errorf("task %s waits with steps %v, want [charge]", ts.Node, ts.Steps)
		}
	}
	answers := map[string]any{}
	for _, in := range res.Interrupts {
		answers[in.ID] = "yes-" + in.Node
	}
	if _, err := g.Invoke(ctx, nil, e.opts(graph.WithResumeMap(answers))...); err == nil || errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("resume: err = %v, want the shipping failure", err)
	}
	if c.get("a.approve") != 2 {
		t.Errorf("the step that asked ran %d times, want 2 (asking, then with the answer)", c.get("a.approve"))
	}
	res, err = g.Invoke(ctx, nil, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(log.Get(res.State)))
	if d := cmp.Diff([]string{"a:a-paid,yes-a,shipped", "b:b-paid,yes-b", "edit"}, got); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
	want := map[string]int{"a.charge": 1, "b.charge": 1, "a.approve": 2, "a.ship": 2}
	for k, n := range want {
		if c.get(k) != n {
			t.Errorf("%s ran %d times, want %d (all: %v)", k, c.get(k), n, c.n)
		}
	}
}
