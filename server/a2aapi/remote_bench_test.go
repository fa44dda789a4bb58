package a2aapi

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// BenchmarkRemoteHop is the latency a one-node graph adds when it is
// called over A2A (loopback, the remote a Trellis A2A endpoint over its
// run service and SQLite) instead of in-process: each op is one local run
// whose node asks the chat assistant, or runs the same chat node itself.
// p50 and p99 are reported per op.
func BenchmarkRemoteHop(b *testing.B) {
	e := newEnv(b)
	a := remoteAgentTB(b, e, "chat-a")
	hop := remoteGraphTB(b, func(ctx context.Context) (string, error) {
		res, err := a.Call(ctx, "hello")
		if err != nil {
			return "", err
		}
		return res.Text, nil
	})
	chat := llmtest.New()
	chat.Otherwise(llmtest.Text(Answer))
	local := remoteGraphTB(b, func(ctx context.Context) (string, error) {
		resp, err := llm.Call(ctx, chat, &llm.Request{Messages: []llm.Message{llm.User("hello")}})
		if err != nil {
			return "", err
		}
		return resp.Message.Text(), nil
	})
	for _, c := range []struct {
		name string
		g    *graph.Graph
	}{{"in-process", local}, {"a2a", hop}} {
		b.Run(c.name, func(b *testing.B) {
			saver := checkpoint.NewMemory()
			var took []time.Duration
			i := 0
			for b.Loop() {
				i++
				start := time.Now()
				res, err := c.g.Invoke(context.Background(), graph.Writes(remoteReply.Set("")), graph.WithCheckpointer(saver), graph.WithThread(fmt.Sprint("t", i)))
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				if remoteReply.Get(res.State) != Answer {
					b.Fatalf("op %d: reply %q", i, remoteReply.Get(res.State))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

func remoteAgentTB(tb testing.TB, e *env, assistant string) *a2atoolAgent {
	tb.Helper()
	a, err := newA2ATool(e.srv.URL + "/a2a/" + assistant)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.Close)
	return a
}

func remoteGraphTB(tb testing.TB, call func(context.Context) (string, error)) *graph.Graph {
	tb.Helper()
	bl := graph.New(remoteReply)
	bl.AddNode("hop", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		text, err := call(ctx)
		if err != nil {
			return nil, err
		}
		return graph.Writes(remoteReply.Set(text)), nil
	})
	bl.SetEntry("hop")
	bl.AddEdge("hop", graph.END)
	g, err := bl.Compile()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
