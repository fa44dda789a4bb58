package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
)

func TestCompileValidation(t *testing.T) {
	k := graph.NewKey[int]("k")
	noop := writeNode()
	route := func(context.Context, graph.State) (string, error) { return "x", nil }
	tests := []struct {
		name  string
		build func(b *graph.Builder)
		want  []string
	}{
		{"missing entry", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddEdge("a", graph.END)
		}, []string{"no entry point"}},
		{"duplicate node", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("a", noop)
			b.SetEntry("a")
			b.AddEdge("a", graph.END)
		}, []string{`node "a" is added twice`}},
		{"unknown node with suggestion", func(b *graph.Builder) {
			b.AddNode("planner", noop)
			b.SetEntry("planner")
			b.AddEdge("planer", graph.END)
		}, []string{`unknown node "planer"`, `did you mean "planner"`}},
		{"dangling", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.SetEntry("a")
		}, []string{`node "a" has no outgoing edge`}},
		{"unreachable", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("island", noop)
			b.SetEntry("a")
			b.AddEdge("a", graph.END)
			b.AddEdge("island", graph.END)
		}, []string{`no path from START reaches ["island"]`}},
		{"path map target missing", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.SetEntry("a")
			b.AddConditionalEdges("a", route, map[string]string{"x": "ghost"})
		}, []string{`path "x"`, `unknown node "ghost"`}},
		{"reserved name", func(b *graph.Builder) {
			b.AddNode(graph.END, noop)
			b.SetEntry("x")
		}, []string{`node name "__end__" is reserved`}},
		{"join into END", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("b", noop)
			b.AddEdge(graph.START, "a")
			b.AddEdge(graph.START, "b")
			b.AddJoin(graph.END, "a", "b")
		}, []string{"join into __end__: a join cannot end the run"}},
		{"join source twice", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("z", noop)
			b.SetEntry("a")
			b.AddJoin("z", "a", "a")
			b.AddEdge("z", graph.END)
		}, []string{`join into z: source "a" is listed twice`}},
		{"join from START", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("z", noop)
			b.SetEntry("a")
			b.AddJoin("z", graph.START, "a")
			b.AddEdge("a", graph.END)
			b.AddEdge("z", graph.END)
		}, []string{"START cannot be a join source"}},
		{"edge into START", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.SetEntry("a")
			b.AddEdge("a", graph.START)
		}, []string{"START cannot be a target"}},
		{"bad key name", func(b *graph.Builder) {}, []string{`"__k"`, "reserved"}},
		{"several problems at once", func(b *graph.Builder) {
			b.AddNode("a", noop)
			b.AddNode("b", noop)
			b.AddEdge("a", "zzz")
		}, []string{"no entry point", `unknown node "zzz"`, `node "b" has no outgoing edge`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys := []graph.AnyKey{k}
			if tc.name == "bad key name" {
				keys = append(keys, graph.NewKey[int]("__k"))
			}
			b := graph.New(keys...)
			tc.build(b)
			if tc.name == "bad key name" {
				b.AddNode("a", noop)
				b.SetEntry("a")
				b.AddEdge("a", graph.END)
			}
			_, err := b.Compile()
			var ce *graph.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile error = %v, want a *CompileError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %s:\n%v", w, err)
				}
			}
		})
	}
}

func TestGotoDestinationsCountAsReachable(t *testing.T) {
	b := graph.New()
	b.AddNode("router", func(context.Context, graph.State) (graph.Output, error) {
		return graph.Command{Goto: []graph.Target{graph.To("target")}}, nil
	}, graph.Destinations("target"))
	b.AddNode("target", writeNode())
	b.SetEntry("router")
	b.AddEdge("target", graph.END)
	g := mustCompile(t, b)
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Path); got != 2 || res.Path[1].Node != "target" {
		t.Fatalf("path = %+v, want router then target", res.Path)
	}
}

// WithOptions adds default run options to a copy of a compiled graph.
func TestWithOptions(t *testing.T) {
	b, _ := chainAB()
	g := mustCompile(t, b)
	limited := g.WithOptions(graph.WithStepLimit(1))
	if _, err := limited.Invoke(context.Background(), nil); err == nil {
		t.Error("the copy ignored its step limit")
	}
	if _, err := g.Invoke(context.Background(), nil); err != nil {
		t.Errorf("the original changed: %v", err)
	}
	if _, err := limited.Invoke(context.Background(), nil, graph.WithStepLimit(5)); err != nil {
		t.Errorf("a run's own option must win: %v", err)
	}
}
