package tool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// BenchmarkToolNode50 measures one graph step in which the tool node runs
// the 50 no-op calls of a prepared assistant message (default parallelism
// bound), from routing to the commit of 50 tool messages and records.
func BenchmarkToolNode50(b *testing.B) {
	noop := tool.MustFunc("noop", "does nothing", func(context.Context, struct{}) (string, error) { return "ok", nil }, tool.ReadOnly())
	n := newNode(b, tool.NodeConfig{Tools: []tool.Tool{noop}})
	gb := graph.New(msgsKey, recordsKey)
	graph.AddSendNode(gb, "tools", n.Run)
	gb.AddFanout(graph.START, n.Route("tools", graph.END), "tools", graph.END)
	gb.AddEdge("tools", graph.END)
	g, err := gb.Compile()
	if err != nil {
		b.Fatal(err)
	}
	calls := make([]llm.ToolCall, 50)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("call_%02d", i), "noop", `{}`)
	}
	input := graph.Writes(graph.Append(msgsKey, llm.User("go"), llm.Assistant("", calls...)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := g.Invoke(ctx, input)
		if err != nil {
			b.Fatal(err)
		}
		if got := len(msgsKey.Get(res.State)); got != 52 {
			b.Fatalf("history has %d messages, want 52", got)
		}
	}
}
