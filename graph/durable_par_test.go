package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// parNode starts three parallel steps a, b, c that finish in the order c,
// b, a (each waits for the next one's end), counting their runs; while
// *fail is set, a and b fail, so only c finishes (and is saved).
func parNode(c *counter, fail *atomic.Bool) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Output, error) {
		cDone, bDone := make(chan struct{}), make(chan struct{})
		var cOnce, bOnce sync.Once
		closeC, closeB := func() { cOnce.Do(func() { close(cDone) }) }, func() { bOnce.Do(func() { close(bDone) }) }
		step := func(name string, after <-chan struct{}, done func()) func(context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				if done != nil {
					defer done()
				}
				if after != nil {
					select {
					case <-after:
					case <-ctx.Done():
						return "", ctx.Err()
					}
				}
				c.add(name)
				if name != "c" && fail.Load() {
					return "", errors.New(name + " fails")
				}
				return name + "!", nil
			}
		}
		// On a re-run a restored step does not run, so its future is done
		// when Go returns: release the step waiting for it then.
		fa := graph.Go(ctx, "a", step("a", bDone, nil))
		fb := graph.Go(ctx, "b", step("b", cDone, closeB))
		fc := graph.Go(ctx, "c", step("c", nil, closeC))
		for f, release := range map[*graph.Future[string]]func(){fb: closeB, fc: closeC} {
			select {
			case <-f.Done():
				release()
			default:
			}
		}
		var got []string
		var first error
		for _, f := range []*graph.Future[string]{fa, fb, fc} {
			v, err := f.Wait(ctx)
			if err != nil && first == nil {
				first = err
			}
			got = append(got, v)
		}
		if first != nil {
			return nil, first
		}
		return graph.Writes(graph.Append(trail, got...)), nil
	}
}

// A re-run after a failure runs only the parallel steps that had not
// finished, and gives each result to the call that started it, whatever
// order they finished in.
func TestParallelStepsRerunOnlyUnfinished(t *testing.T) {
	for _, mode := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) {
			var c counter
			var fail atomic.Bool
			fail.Store(true)
			b := graph.New(trail)
			b.AddNode("work", parNode(&c, &fail))
			b.SetEntry("work")
			b.AddEdge("work", graph.END)
			g := mustCompile(t, b)
			opts := append(threadOpts(checkpoint.NewMemory(), "t"), graph.WithDurability(mode))
			if _, err := g.Invoke(context.Background(), nil, opts...); err == nil || !strings.Contains(err.Error(), "fails") {
				t.Fatalf("first run: err = %v, want a step's failure", err)
			}
			snap, err := g.GetState(context.Background(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Tasks) != 1 || !cmp.Equal(snap.Tasks[0].Steps, []string{"c"}) {
				t.Fatalf("saved steps after the failure: %+v, want only c", snap.Tasks)
			}
			fail.Store(false)
			res, err := g.Invoke(context.Background(), nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a!", "b!", "c!"}, trail.Get(res.State)); d != "" {
				t.Errorf("trail (-want +got):\n%s", d)
			}
			if c.get("a") != 2 || c.get("b") != 2 || c.get("c") != 1 {
				t.Errorf("runs a=%d b=%d c=%d, want 2, 2 and 1 (c had finished)", c.get("a"), c.get("b"), c.get("c"))
			}
		})
	}
}

// askNode starts three parallel steps; b asks a question inside its step.
func askNode(c *counter) graph.NodeFunc {
	return func(ctx context.Context, _ graph.State) (graph.Output, error) {
		plain := func(name string) func(context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				c.add(name)
				graph.Emit(ctx, "from "+name)
				return name + "!", nil
			}
		}
		fa := graph.Go(ctx, "a", plain("a"))
		fb := graph.Go(ctx, "b", func(ctx context.Context) (string, error) {
			c.add("b")
			ok, err := graph.Interrupt[string](ctx, "approve b?")
			if err != nil {
				return "", err
			}
			return "b:" + ok, nil
		})
		fc := graph.Go(ctx, "c", plain("c"))
		var got []string
		for _, f := range []*graph.Future[string]{fa, fb, fc} {
			v, err := f.Wait(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		return graph.Writes(graph.Append(trail, got...)), nil
	}
}

// An interrupt inside one parallel step stops the node; the other steps
// are saved, and on resume only the asking step runs again, with the
// answer. Events the steps emit reach the stream.
func TestParallelStepInterrupt(t *testing.T) {
	var c counter
	b := graph.New(trail)
	b.AddNode("work", askNode(&c))
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "t")
	var custom []string
	for ev, err := range g.Stream(context.Background(), nil, append(opts, graph.WithEvents(graph.EventCustom))...) {
		if err != nil {
			if !errors.Is(err, graph.ErrInterrupted) {
				t.Fatal(err)
			}
			break
		}
		if s, ok := ev.Custom.(string); ok {
			custom = append(custom, s)
		}
	}
	if d := cmp.Diff([]string{"from a", "from c"}, custom); d != "" {
		t.Errorf("custom events (-want +got):\n%s", d)
	}
	snap, err := g.GetState(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Interrupts) != 1 || !strings.Contains(snap.Interrupts[0].ID, ":step1:0") || string(snap.Interrupts[0].Payload) != `"approve b?"` {
		t.Fatalf("waiting interrupts: %+v, want b's", snap.Interrupts)
	}
	if len(snap.Tasks) != 1 || !cmp.Equal(snap.Tasks[0].Steps, []string{"a", "c"}) {
		t.Fatalf("saved steps: %+v, want a and c", snap.Tasks)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResume("yes"))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a!", "b:yes", "c!"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	if c.get("a") != 1 || c.get("b") != 2 || c.get("c") != 1 {
		t.Errorf("runs a=%d b=%d c=%d, want 1, 2 and 1", c.get("a"), c.get("b"), c.get("c"))
	}
}

// A re-run that starts its parallel steps in another order gets a
// *NonDeterminismError from Wait.
func TestParallelStepsNonDeterminism(t *testing.T) {
	saver := checkpoint.NewMemory()
	swap := false
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		names := []string{"x", "y"}
		if swap {
			names = []string{"y", "x"}
		}
		var fs []*graph.Future[int]
		for i, n := range names {
			fs = append(fs, graph.Go(ctx, n, func(context.Context) (int, error) { return i, nil }))
		}
		for _, f := range fs {
			if _, err := f.Wait(ctx); err != nil {
				return nil, err
			}
		}
		if !swap {
			return nil, errors.New("fail after the steps")
		}
		return nil, nil
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...); err == nil {
		t.Fatal("the first run did not fail")
	}
	swap = true
	_, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...)
	var nd *graph.NonDeterminismError
	if !errors.As(err, &nd) || nd.Call != 0 || nd.Saved != "x" || nd.Called != "y" {
		t.Fatalf("err = %v, want a NonDeterminismError for call 0 (x saved, y called)", err)
	}
}

// Parallel steps work in a node of a subgraph: the parent's resume re-runs
// only the unfinished ones.
func TestParallelStepsInSubgraph(t *testing.T) {
	var c counter
	var fail atomic.Bool
	fail.Store(true)
	sb := graph.New(trail)
	sb.AddNode("work", parNode(&c, &fail))
	sb.SetEntry("work")
	sb.AddEdge("work", graph.END)
	sub := mustCompile(t, sb)
	pb := graph.New(trail)
	pb.AddSubgraph("child", sub)
	pb.SetEntry("child")
	pb.AddEdge("child", graph.END)
	g := mustCompile(t, pb)
	opts := threadOpts(checkpoint.NewMemory(), "t")
	if _, err := g.Invoke(context.Background(), nil, opts...); err == nil {
		t.Fatal("the first run did not fail")
	}
	fail.Store(false)
	res, err := g.Invoke(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"a!", "b!", "c!"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	if c.get("a") != 2 || c.get("b") != 2 || c.get("c") != 1 {
		t.Errorf("runs a=%d b=%d c=%d, want 2, 2 and 1", c.get("a"), c.get("b"), c.get("c"))
	}
}

// Mixed with Durable, parallel steps share its call order; steps do not
// nest; a node that returns without waiting still has its steps saved;
// a panic is the step's error.
func TestParallelStepsMisuse(t *testing.T) {
	if _, err := graph.Go(context.Background(), "s", func(context.Context) (int, error) { return 1, nil }).Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "outside a graph node") {
		t.Errorf("outside a node: err = %v", err)
	}
	cases := map[string]struct {
		node graph.NodeFunc
		want string
	}{
		"durable inside": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Go(ctx, "outer", func(ctx context.Context) (int, error) {
				return graph.Durable(ctx, "inner", func(context.Context) (int, error) { return 1, nil })
			}).Wait(ctx)
			return nil, err
		}, `"inner" was called inside parallel step "outer"`},
		"go inside": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Go(ctx, "outer", func(ctx context.Context) (int, error) {
				return graph.Go(ctx, "inner", func(context.Context) (int, error) { return 1, nil }).Wait(ctx)
			}).Wait(ctx)
			return nil, err
		}, `"inner" was started inside parallel step "outer"`},
		"go inside durable": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Durable(ctx, "outer", func(ctx context.Context) (int, error) {
				return graph.Go(ctx, "inner", func(context.Context) (int, error) { return 1, nil }).Wait(ctx)
			})
			return nil, err
		}, `"inner" was started inside step "outer"`},
		"panic": {func(ctx context.Context, _ graph.State) (graph.Output, error) {
			_, err := graph.Go(ctx, "p", func(context.Context) (int, error) { panic("boom") }).Wait(ctx)
			return nil, err
		}, "boom"},
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

	// Not waited for: the node fails at once, the engine waits for the
	// step, which is saved and not repeated.
	var c counter
	saver := checkpoint.NewMemory()
	release := make(chan struct{})
	first := true
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		v, err := graph.Durable(ctx, "seq", func(context.Context) (string, error) { c.add("seq"); return "s", nil })
		if err != nil {
			return nil, err
		}
		f := graph.Go(ctx, "bg", func(context.Context) (string, error) {
			<-release
			c.add("bg")
			return "bg", nil
		})
		if first {
			first = false
			close(release)
			return nil, errors.New("the node fails without waiting")
		}
		w, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(trail, v, w)), nil
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	if _, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...); err == nil {
		t.Fatal("the first run did not fail")
	}
	res, err := g.Invoke(context.Background(), nil, threadOpts(saver, "t")...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"s", "bg"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	if c.get("seq") != 1 || c.get("bg") != 1 {
		t.Errorf("runs seq=%d bg=%d, want once each", c.get("seq"), c.get("bg"))
	}
}

// Two parallel steps that both ask: answering one re-runs the node, that
// step completes (and is saved), the other asks again under the same ID;
// answering it finishes the node.
func TestParallelStepsBothAsk(t *testing.T) {
	var c counter
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		ask := func(name string) func(context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				c.add(name)
				v, err := graph.Interrupt[string](ctx, name+"?")
				if err != nil {
					return "", err
				}
				return name + "=" + v, nil
			}
		}
		fx, fy := graph.Go(ctx, "x", ask("x")), graph.Go(ctx, "y", ask("y"))
		var got []string
		var first error
		for _, f := range []*graph.Future[string]{fx, fy} {
			v, err := f.Wait(ctx)
			if err != nil && first == nil {
				first = err
			}
			got = append(got, v)
		}
		if first != nil {
			return nil, first
		}
		return graph.Writes(graph.Append(trail, got...)), nil
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	opts := threadOpts(checkpoint.NewMemory(), "t")
	waiting := func() map[string]string {
		t.Helper()
		snap, err := g.GetState(context.Background(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, in := range snap.Interrupts {
			out[string(in.Payload)] = in.ID
		}
		return out
	}
	if _, err := g.Invoke(context.Background(), nil, opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("first run: %v", err)
	}
	w := waiting()
	if len(w) != 2 {
		t.Fatalf("waiting %v, want x and y", w)
	}
	yID := w[`"y?"`]
	if _, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{w[`"x?"`]: "1"}))...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("after answering x: %v", err)
	}
	if w := waiting(); len(w) != 1 || w[`"y?"`] != yID {
		t.Fatalf("waiting after answering x: %v, want y under %s", w, yID)
	}
	res, err := g.Invoke(context.Background(), nil, append(opts, graph.WithResumeMap(map[string]any{yID: "2"}))...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"x=1", "y=2"}, trail.Get(res.State)); d != "" {
		t.Errorf("trail (-want +got):\n%s", d)
	}
	if c.get("x") != 2 || c.get("y") != 3 {
		t.Errorf("runs x=%d y=%d, want 2 (ask, answer) and 3 (ask, ask again, answer)", c.get("x"), c.get("y"))
	}
}

// A node that panics after starting a parallel step still has the step
// joined: the step's held event is delivered before the run fails with
// the node's panic (the join runs in the deferred call that recovers).
func TestParallelStepJoinedWhenNodePanics(t *testing.T) {
	release := make(chan struct{})
	b := graph.New(trail)
	b.AddNode("work", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		graph.Go(ctx, "bg", func(ctx context.Context) (int, error) {
			<-release
			graph.Emit(ctx, "from the step")
			return 1, nil
		})
		close(release)
		panic("node boom")
	})
	b.SetEntry("work")
	b.AddEdge("work", graph.END)
	g := mustCompile(t, b)
	var custom []string
	var runErr error
	for ev, err := range g.Stream(context.Background(), nil, append(threadOpts(checkpoint.NewMemory(), "t"), graph.WithEvents(graph.EventCustom))...) {
		if err != nil {
			runErr = err
			break
		}
		if s, ok := ev.Custom.(string); ok {
			custom = append(custom, s)
		}
	}
	var pe *graph.PanicError
	if !errors.As(runErr, &pe) || pe.Value != "node boom" || !strings.Contains(string(pe.Stack), "TestParallelStepJoinedWhenNodePanics") {
		t.Fatalf("err = %v, want the node's panic with its stack", runErr)
	}
	if d := cmp.Diff([]string{"from the step"}, custom); d != "" {
		t.Errorf("custom events (-want +got):\n%s", d)
	}
}
