package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// A node may run nested graphs concurrently, each in a thread of its own
// (sub-agents fanned out from one node): deciding whether a nested run's
// namespace is fresh must not race between them (go test -race), and each
// thread must hold its run's checkpoints.
func TestConcurrentNestedRunsOwnThreads(t *testing.T) {
	ctx := context.Background()
	msgs := graph.NewKey("msgs", graph.Concat[string]())
	sb := graph.New(msgs)
	sb.AddNode("s", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(msgs, "sub")), nil
	})
	sb.SetEntry("s")
	sb.AddEdge("s", graph.END)
	sub := mustCompile(t, sb)

	const n = 4
	s := newFoldSaver()
	pb := graph.New(msgs)
	pb.AddNode("fan", func(ctx context.Context, st graph.State) (graph.Output, error) {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = sub.Invoke(ctx, graph.Writes(graph.Append(msgs, "in")), graph.WithThread(fmt.Sprintf("child-%d", i)))
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return graph.Writes(graph.Append(msgs, "fanned")), nil
	})
	pb.SetEntry("fan")
	pb.AddEdge("fan", graph.END)
	parent := mustCompile(t, pb)
	if _, err := parent.Invoke(ctx, graph.Update{}, graph.WithCheckpointer(s), graph.WithThread("t")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ns, err := s.Namespaces(ctx, fmt.Sprintf("child-%d", i))
		if err != nil || len(ns) != 1 {
			t.Errorf("thread child-%d: namespaces %q, %v; want the nested run's", i, ns, err)
		}
	}
}

// A node that runs a nested graph twice in the parent's thread — first
// naming the parent's saver itself, then inheriting it — finds the first
// run's checkpoints the second time: only the first nested run of a task
// may skip reading its namespace.
func TestNestedRunAfterOneWithTheSaverGiven(t *testing.T) {
	ctx := context.Background()
	msgs := graph.NewKey("msgs", graph.Concat[string]())
	sb := graph.New(msgs)
	sb.AddNode("s", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(msgs, "sub")), nil
	})
	sb.SetEntry("s")
	sb.AddEdge("s", graph.END)
	sub := mustCompile(t, sb)

	s := newFoldSaver()
	var first, second []string
	pb := graph.New(msgs)
	pb.AddNode("twice", func(ctx context.Context, st graph.State) (graph.Output, error) {
		res, err := sub.Invoke(ctx, graph.Writes(graph.Append(msgs, "one")), graph.WithCheckpointer(s))
		if err != nil {
			return nil, err
		}
		first = msgs.Get(res.State)
		if res, err = sub.Invoke(ctx, graph.Writes(graph.Append(msgs, "two"))); err != nil {
			return nil, err
		}
		second = msgs.Get(res.State)
		return nil, nil
	})
	pb.SetEntry("twice")
	pb.AddEdge("twice", graph.END)
	parent := mustCompile(t, pb)
	if _, err := parent.Invoke(ctx, graph.Update{}, graph.WithCheckpointer(s), graph.WithThread("t")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"one", "sub"}; !slices.Equal(first, want) || !slices.Equal(second, first) {
		t.Errorf("nested states %q then %q, want %q both (the second finds what the first saved)", first, second, want)
	}
}

// A command's target that ran a nested graph in a step that then failed
// runs again, on the next resume, under the task ID the command's record
// kept: its nested run finds the namespace the failed attempt wrote, as
// its task was not scheduled by this run's checkpoint.
func TestCommandTargetRerunFindsItsNestedRun(t *testing.T) {
	ctx := context.Background()
	log := graph.NewKey("log", graph.Concat[string]())
	sb := graph.New(log)
	sb.AddNode("s", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return graph.Writes(graph.Append(log, "sub")), nil
	})
	sb.SetEntry("s")
	sb.AddEdge("s", graph.END)
	sub := mustCompile(t, sb)

	var failing atomic.Bool
	failing.Store(true)
	b := graph.New(log)
	b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
		v, err := graph.Interrupt[string](ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, "ask="+v)), nil
	}, graph.Destinations("worker")) // only so that worker counts as reachable
	b.AddNode("worker", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if _, err := sub.Invoke(ctx, graph.Writes(graph.Append(log, "in"))); err != nil {
			return nil, err
		}
		if failing.Load() {
			return nil, errors.New("worker failed")
		}
		return graph.Writes(graph.Append(log, "worker")), nil
	})
	b.AddEdge(graph.START, "ask")
	b.AddEdge("ask", graph.END)
	b.AddEdge("worker", graph.END)
	g := mustCompile(t, b)

	for _, s := range []checkpoint.Saver{checkpoint.NewMemory(), newFoldSaver()} {
		opts := []graph.RunOption{graph.WithCheckpointer(s), graph.WithThread(fmt.Sprintf("%T", s))}
		if _, err := g.Invoke(ctx, graph.Update{}, opts...); !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("first run: %v, want an interrupt", err)
		}
		failing.Store(true)
		_, err := g.Invoke(ctx, nil, append(opts, graph.WithCommand(graph.Command{Goto: []graph.Target{graph.To("worker")}}))...)
		if err == nil || !strings.Contains(err.Error(), "worker failed") {
			t.Fatalf("the command's step: %v, want worker's failure", err)
		}
		failing.Store(false)
		res, err := g.Invoke(ctx, nil, append(opts, graph.WithResume("yes"))...)
		if err != nil {
			t.Fatalf("%T: resume: %v", s, err)
		}
		if got := log.Get(res.State); !slices.Contains(got, "worker") || !slices.Contains(got, "ask=yes") {
			t.Errorf("%T: log = %q, want worker's and ask's writes", s, got)
		}
	}
}
