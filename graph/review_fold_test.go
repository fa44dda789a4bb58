package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

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
