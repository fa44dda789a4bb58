package graph_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/graph"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustCompile(t testing.TB, b *graph.Builder, opts ...graph.RunOption) *graph.Graph {
	t.Helper()
	g, err := b.Compile(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// writeNode returns a node that writes the given writes.
func writeNode(ws ...graph.Write) graph.NodeFunc {
	return func(context.Context, graph.State) (graph.Output, error) { return graph.Writes(ws...), nil }
}

// logNode appends its name to key.
func logNode(key *graph.Key[[]string], name string) graph.NodeFunc {
	return writeNode(graph.Append(key, name))
}
