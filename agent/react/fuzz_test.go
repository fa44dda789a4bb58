package react_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// FuzzAnyReplyLeavesTheThreadUsable feeds a random model reply (text, and
// up to two tool calls with random IDs, names and arguments) through a
// ReAct turn, then asks a second turn on the same thread. Both turns must
// finish, the second with the model's answer, and every request the model
// received must hold a history every provider accepts (llm.CheckHistory).
func FuzzAnyReplyLeavesTheThreadUsable(f *testing.F) {
	f.Add("", "weather", `{"city":"Oslo"}`, "", "", "", "", uint8(1))
	f.Add("thinking...", "", "{}", "", "weather", `{"city":`, "x", uint8(3))
	f.Add("", "get weather", "[1,2]", "id 1", "stop", `{"answer":"42"}`, "id 1", uint8(7))
	f.Add("ü", "weather", "null", "call:0", "nope", `"s"`, "call:0", uint8(5))
	f.Add("", "weather", `{"city":"Oslo"}`, "dup", "weather", `{"city":"Rome"}`, "dup", uint8(3))
	f.Fuzz(func(t *testing.T, text, name1, args1, id1, name2, args2, id2 string, flags uint8) {
		var calls []llm.ToolCall
		if flags&1 != 0 {
			calls = append(calls, llm.ToolCall{ID: id1, Name: name1, Arguments: args1})
		}
		if flags&4 != 0 {
			calls = append(calls, llm.ToolCall{ID: id2, Name: name2, Arguments: args2})
		}
		turn := llmtest.Text(text)
		if len(calls) > 0 {
			turn = llmtest.ToolCalls(calls...).WithText(text)
		}
		m := llmtest.New().Reply(turn)
		m.Otherwise(llmtest.Text("done"))
		var r ran
		g := mustNew(t, react.Config{Model: m, Tools: []tool.Tool{weather(&r), tool.Stop()}})
		opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("fuzz")}
		run := func(input string) graph.State {
			t.Helper()
			if flags&2 == 0 {
				res, err := g.Invoke(context.Background(), react.Input(input), opts...)
				if err != nil {
					t.Fatalf("turn %q failed: %v", input, err)
				}
				return res.State
			}
			var last graph.State
			for ev, err := range g.Stream(context.Background(), react.Input(input),
				append(opts, graph.WithEvents(graph.EventMessages|graph.EventValues))...) {
				if err != nil {
					t.Fatalf("turn %q failed: %v", input, err)
				}
				if ev.Kind == graph.EventValues {
					last = ev.State
				}
			}
			return last
		}
		run("first")
		state := run("second")
		if got, ok := react.Answer(state); !ok || got != "done" {
			t.Errorf("second turn answered %q, %v; want \"done\"", got, ok)
		}
		for _, req := range m.Requests() {
			if err := llm.CheckHistory(req.Messages); err != nil {
				t.Fatalf("request %d holds a history a provider would refuse: %v", req.N, err)
			}
		}
		if err := llm.CheckHistory(llm.RepairHistory(react.Messages.Get(state))); err != nil {
			t.Fatalf("the stored history cannot be repaired: %v", err)
		}
	})
}
