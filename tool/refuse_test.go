package tool_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// TestRefuseRecordsWithoutRunning checks that a refused call gets a tool
// error message and a record, and that its tool never runs.
func TestRefuseRecordsWithoutRunning(t *testing.T) {
	var c counter
	n := newNode(t, tool.NodeConfig{Tools: []tool.Tool{echoTool(t, "send", &c)}})
	call := call("c9", "send", `{"text":"x"}`)
	b := graph.New(msgsKey, recordsKey)
	b.AddNode("gate", func(ctx context.Context, s graph.State) (graph.Output, error) {
		return n.Refuse(ctx, call, "not in this task", "tool \"send\" is gated"), nil
	})
	b.SetEntry("gate")
	b.AddEdge("gate", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := msgsKey.Get(res.State)
	if len(msgs) != 1 || !msgs[0].IsError || msgs[0].ToolCallID != "c9" || msgs[0].Text() != "not in this task" || msgs[0].Role != llm.RoleTool {
		t.Errorf("history = %+v", msgs)
	}
	rec, ok := tool.LookupCall(res.State, recordsKey, "c9")
	if !ok || rec.Result != "not in this task" || rec.Error != `tool "send" is gated` || rec.Node != "gate" || rec.Approval != tool.OutcomeNotNeeded {
		t.Errorf("record = %+v, %v", rec, ok)
	}
	if c.get("send:x") != 0 {
		t.Error("the refused tool ran")
	}
}
