package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

var trail = graph.NewKey("trail", graph.Concat[string]())

// stepsNode returns a node that runs one durable step per name, counting
// each run of a step's work in c, and fails after them while *fail is set.
func stepsNode(c *counter, fail *bool, names ...string) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Output, error) {
		var got []string
		for _, n := range names {
			v, err := graph.Durable(ctx, n, func(context.Context) (string, error) {
				c.add(n)
				return n + "!", nil
			})
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		if *fail {
			return nil, errors.New("the node fails after its steps")
		}
		return graph.Writes(graph.Append(trail, got...)), nil
	}
}

func stepsGraph(t *testing.T, c *counter, fail *bool, names ...string) *graph.Graph {
	b := graph.New(trail)
	b.AddNode("work", stepsNode(c, fail, names...))
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	return mustCompile(t, b)
}

// A node that failed after its steps runs again on resume without
// repeating them, in every durability mode.
func TestDurableStepsSurviveAFailure(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			fail := true
			g := stepsGraph(t, &c, &fail, "a", "b")
			opts := append(threadOpts(checkpoint.NewMemory(), "t"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
				t.Fatal("the first run did not fail")
			}
			snap, err := g.GetState(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Tasks) != 1 || !cmp.Equal(snap.Tasks[0].Steps, []string{"a", "b"}) {
				t.Errorf("the failed task's saved steps: %+v, want a and b", snap.Tasks)
			}
			fail = false
			res, err := g.Invoke(context.Background(), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a!", "b!"}, trail.Get(res.State)); d != "" {
				t.Errorf("trail (-want +got):\n%s", d)
			}
			if c.get("a") != 1 || c.get("b") != 1 {
				t.Errorf("steps ran a=%d b=%d times, want once each", c.get("a"), c.get("b"))
			}
		})
	}
}

// The same after a step that committed: under DurabilityExit the steps of
// the failing second step are written when the run stops.
func TestDurableStepsSurviveAFailureLater(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			fail := true
			b := graph.New(trail)
			b.AddNode("first", logNode(trail, "first"))
			b.AddNode("work", stepsNode(&c, &fail, "a", "b"))
			b.SetEntry("first")
			b.AddEdge("first", "work")
			b.AddEdge("work", graph.END)
			g := mustCompile(t, b)
			opts := append(threadOpts(checkpoint.NewMemory(), "t"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(trail, "in")), opts...); err == nil {
				t.Fatal("the first run did not fail")
			}
			fail = false
			res, err := g.Invoke(context.Background(), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"in", "first", "a!", "b!"}, trail.Get(res.State)); d != "" {
				t.Errorf("trail (-want +got):\n%s", d)
			}
			if c.get("a") != 1 || c.get("b") != 1 {
				t.Errorf("steps ran a=%d b=%d times, want once each", c.get("a"), c.get("b"))
			}
		})
	}
}

// A re-run that calls its steps in another order fails with an error
// naming the saved step and the one called.
func TestDurableNonDeterminism(t *testing.T) {
	var c counter
	fail := true
	saver := checkpoint.NewMemory()
	if _, err := stepsGraph(t, &c, &fail, "a", "b").Invoke(context.Background(), nil, threadOpts(saver, "t")...); err == nil {
		t.Fatal("the first run did not fail")
	}
	_, err := stepsGraph(t, &c, &fail, "a", "x", "b").Invoke(context.Background(), nil, threadOpts(saver, "t")...)
	var nd *graph.NonDeterminismError
	if !errors.As(err, &nd) || !errors.Is(err, graph.ErrNonDeterminism) {
		t.Fatalf("err = %v, want a *NonDeterminismError", err)
	}
	if nd.Call != 1 || nd.Saved != "b" || nd.Called != "x" || nd.Node != "work" {
		t.Errorf("error = %+v", nd)
	}
	for _, s := range []string{`"x"`, `"b"`, "#1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
	if c.get("x") != 0 || c.get("a") != 1 {
		t.Errorf("steps ran a=%d x=%d times, want 1 and 0", c.get("a"), c.get("x"))
	}
}

// A retried node gets the steps of its failed attempt back, also without
// a checkpointer; a failed step is not saved and runs again.
func TestDurableStepsAcrossRetries(t *testing.T) {
	var c counter
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		a, err := graph.Durable(ctx, "a", func(context.Context) (string, error) { c.add("a"); return "a", nil })
		if err != nil {
			return nil, err
		}
		f, err := graph.Durable(ctx, "flaky", func(context.Context) (string, error) {
			c.add("flaky")
			if c.get("flaky") < 3 {
				return "", errors.New("not yet")
			}
			return "flaky", nil
		})
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(trail, a, f)), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, RetryOn: func(error) bool { return true }}))
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	res, err := mustCompile(t, b).Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a", "flaky"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	if c.get("a") != 1 || c.get("flaky") != 3 {
		t.Errorf("a ran %d times (want 1), flaky %d (want 3)", c.get("a"), c.get("flaky"))
	}
}

type receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
	note   string // not saved
}

// A step's result comes back through JSON on the first run as on a re-run,
// so the node sees the same value either way.
func TestDurableResultThroughJSON(t *testing.T) {
	saver := checkpoint.NewMemory()
	var seen []receipt
	fail := true
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		r, err := graph.Durable(ctx, "charge", func(context.Context) (receipt, error) {
			return receipt{ID: "r1", Amount: 5, note: "kept in memory only"}, nil
		})
		if err != nil {
			return nil, err
		}
		seen = append(seen, r)
		if fail {
			return nil, errors.New("fail once")
		}
		return nil, nil
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...); err == nil {
		t.Fatal("no failure")
	}
	fail = false
	if _, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...); err != nil {
		t.Fatal(err)
	}
	want := receipt{ID: "r1", Amount: 5}
	if len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Errorf("the node saw %+v, want %+v twice", seen, want)
	}
}

// Misuse gets errors that say what is wrong.
func TestDurableMisuse(t *testing.T) {
	if _, err := graph.Durable(context.Background(), "s", func(context.Context) (int, error) { return 1, nil }); err == nil || !strings.Contains(err.Error(), "outside a graph node") {
		t.Errorf("outside a node: err = %v", err)
	}
	cases := map[string]struct {
		node graph.NodeFunc
		want string
	}{
		"nested": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Durable(ctx, "outer", func(ctx context.Context) (int, error) {
				return graph.Durable(ctx, "inner", func(context.Context) (int, error) { return 1, nil })
			})
			return nil, err
		}, `"inner" was called inside step "outer"`},
		"unencodable": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Durable(ctx, "ch", func(context.Context) (chan int, error) { return make(chan int), nil })
			return nil, err
		}, `encode the result of step "ch"`},
	}
	for name, tc := range cases {
		b := graph.New(trail)
		b.AddNode("work", tc.node)
		b.SetEntry("work")
		b.AddEdge("work", graph.END)
		_, err := mustCompile(t, b).Invoke(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}

	// A saved result that does not fit the type a changed program asks for.
	saver := checkpoint.NewMemory()
	var c counter
	fail := true
	if _, err := stepsGraph(t, &c, &fail, "a").Invoke(context.Background(), nil, threadOpts(saver, "t")...); err == nil {
		t.Fatal("no failure")
	}
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		_, err := graph.Durable(ctx, "a", func(context.Context) (int, error) { return 1, nil })
		return nil, err
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil, threadOpts(saver, "t")...)
	if err == nil || !strings.Contains(err.Error(), `saved result of step "a"`) || !strings.Contains(err.Error(), "int") {
		t.Errorf("changed type: err = %v", err)
	}
}
