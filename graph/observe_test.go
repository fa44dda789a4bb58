package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

// spanKey marks a context with the op an observer started in it, so the
// test can see which op each op is nested in.
type spanKey struct{}

// treeObserver records each op as "kind:name" under its parent's label.
type treeObserver struct {
	mu     sync.Mutex
	parent map[string]string // op label → the label of the op its context came from
	ends   map[string]graph.OpEnd
}

func (o *treeObserver) Start(ctx context.Context, op graph.Op) (context.Context, func(graph.OpEnd)) {
	label := fmt.Sprintf("%s:%d", op.Kind, op.Step)
	switch op.Kind {
	case graph.OpTask:
		label = op.Kind.String() + ":" + op.Node
	case graph.OpModelCall:
		label = op.Kind.String() + ":" + op.Model
	case graph.OpToolCall:
		label = op.Kind.String() + ":" + op.Tool
	}
	if op.Namespace != "" {
		label = strings.SplitN(op.Namespace, ":", 2)[0] + "/" + label
	}
	p, _ := ctx.Value(spanKey{}).(string)
	o.mu.Lock()
	o.parent[label] = p
	o.mu.Unlock()
	return context.WithValue(ctx, spanKey{}, label), func(e graph.OpEnd) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ends[label] = e
	}
}

// TestObserverSeesNestedWork checks that the observer sees steps, tasks
// (parallel ones too), work a node reports with Observe, and a subgraph's
// steps and tasks, each started in the context of the op it belongs to,
// and that task ends carry their usage and error.
func TestObserverSeesNestedWork(t *testing.T) {
	sb := graph.New(sharedLog)
	sb.AddNode("inner", logNode(sharedLog, "inner"))
	sb.SetEntry("inner")
	sb.AddEdge("inner", graph.END)
	sub := mustCompile(t, sb)

	boom := errors.New("tool failed")
	b := graph.New(sharedLog)
	b.AddNode("model", func(ctx context.Context, s graph.State) (graph.Output, error) {
		ctx, end := graph.Observe(ctx, graph.Op{Kind: graph.OpModelCall, Model: "m1"})
		if got, _ := ctx.Value(spanKey{}).(string); got != "model-call:m1" {
			return nil, fmt.Errorf("the call's context is %q's", got)
		}
		graph.RecordUsage(ctx, graph.Usage{InputTokens: 7, OutputTokens: 3})
		end(graph.OpEnd{Usage: graph.Usage{InputTokens: 7, OutputTokens: 3}, FinishReason: "stop"})
		return nil, nil
	})
	b.AddNode("a", func(ctx context.Context, s graph.State) (graph.Output, error) {
		_, end := graph.Observe(ctx, graph.Op{Kind: graph.OpToolCall, Tool: "search", CallID: "c1"})
		end(graph.OpEnd{Err: boom})
		return nil, nil
	})
	b.AddNode("b", logNode(sharedLog, "b"))
	b.AddSubgraph("sub", sub)
	b.SetEntry("model")
	b.AddEdge("model", "a")
	b.AddEdge("model", "b")
	b.AddEdge("a", "sub")
	b.AddEdge("b", "sub")
	b.AddEdge("sub", graph.END)
	g := mustCompile(t, b)

	o := &treeObserver{parent: map[string]string{}, ends: map[string]graph.OpEnd{}}
	if _, err := g.Invoke(context.Background(), nil, graph.WithObserver(o)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"step:1":           "",
		"task:model":       "step:1",
		"model-call:m1":    "task:model",
		"step:2":           "",
		"task:a":           "step:2",
		"tool-call:search": "task:a",
		"task:b":           "step:2",
		"step:3":           "",
		"task:sub":         "step:3",
		"sub/step:1":       "task:sub",
		"sub/task:inner":   "sub/step:1",
	}
	if diff := cmp.Diff(want, o.parent); diff != "" {
		t.Errorf("op → parent op (-want +got):\n%s", diff)
	}
	if got := o.ends["task:model"].Task.Usage; got.InputTokens != 7 || got.OutputTokens != 3 {
		t.Errorf("task:model ended with usage %+v, want 7 in, 3 out", got)
	}
	if e := o.ends["model-call:m1"]; e.FinishReason != "stop" {
		t.Errorf("model-call ended with %+v", e)
	}
	if !errors.Is(o.ends["tool-call:search"].Err, boom) {
		t.Errorf("tool-call ended with %v, want its error", o.ends["tool-call:search"].Err)
	}
	labels := slices.Sorted(func(yield func(string) bool) {
		for k := range o.ends {
			if !yield(k) {
				return
			}
		}
	})
	if len(labels) != len(want) {
		t.Errorf("ended ops %v, want one end for each of the %d started", labels, len(want))
	}
}

// TestObserveWithoutObserver checks that Observe outside a node, or in a
// run without an observer, returns the context unchanged.
func TestObserveWithoutObserver(t *testing.T) {
	ctx := context.Background()
	got, end := graph.Observe(ctx, graph.Op{Kind: graph.OpModelCall})
	end(graph.OpEnd{})
	if got != ctx {
		t.Error("Observe outside a node changed the context")
	}
	b := graph.New(sharedLog)
	b.AddNode("n", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if got, _ := graph.Observe(ctx, graph.Op{Kind: graph.OpModelCall}); got != ctx {
			return nil, errors.New("Observe without an observer changed the context")
		}
		return nil, nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	if _, err := mustCompile(t, b).Invoke(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
