package deep_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inRun runs fn inside a graph node of a run with st and thread (no
// thread when it is ""), as the tools run in an agent.
func inRun(t testing.TB, st store.Store, thread string, fn func(ctx context.Context)) {
	t.Helper()
	k := graph.NewKey[int]("n")
	b := graph.New(k)
	b.AddNode("n", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		fn(ctx)
		return nil, nil
	})
	b.SetEntry("n")
	b.AddEdge("n", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithStore(st)}
	if thread != "" {
		opts = append(opts, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(thread))
	}
	if _, err := g.Invoke(context.Background(), nil, opts...); err != nil {
		t.Fatal(err)
	}
}

// toolsByName indexes tools.
func toolsByName(ts []tool.Tool) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, t := range ts {
		m[t.Info().Name] = t
	}
	return m
}

// call calls tl with args encoded as JSON.
func call(ctx context.Context, tl tool.Tool, args any) (string, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	return tl.Call(ctx, b)
}
