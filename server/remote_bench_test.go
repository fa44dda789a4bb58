package server

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// BenchmarkRemoteLangGraphHop is one local run of a one-node graph whose
// node runs the remote chat assistant (one scripted model call) over the
// LangGraph API on loopback (thread create, run create, join, run read,
// state read), reporting p50 and p99 per op; compare
// server/a2aapi's BenchmarkRemoteHop for A2A and the in-process call.
func BenchmarkRemoteLangGraphHop(b *testing.B) {
	model := llmtest.New()
	model.Otherwise(llmtest.Text("hello back"))
	rs, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(b.TempDir(), "r.db"), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	if err := rs.Register("chat", chatSpec(model)); err != nil {
		b.Fatal(err)
	}
	remote := serveInBackground(b, rs)
	a, err := remotegraph.New(remotegraph.Config{Name: "chat", URL: remote.url, Assistant: "chat", AllowPrivate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	reply := graph.NewKey[string]("reply")
	bl := graph.New(reply)
	bl.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		res, err := a.Call(ctx, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}})
		if err != nil {
			return nil, err
		}
		return graph.Writes(reply.Set(res.Text)), nil
	})
	bl.SetEntry("hop")
	bl.AddEdge("hop", graph.END)
	g, err := bl.Compile()
	if err != nil {
		b.Fatal(err)
	}
	saver := checkpoint.NewMemory()
	var took []time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		res, err := g.Invoke(context.Background(), graph.Writes(reply.Set("")), graph.WithCheckpointer(saver), graph.WithThread(fmt.Sprint("t", i)))
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		if reply.Get(res.State) != "hello back" {
			b.Fatalf("reply %q", reply.Get(res.State))
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}
