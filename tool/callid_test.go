package tool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// TestCallIDInContext checks that each call's tool sees its own call ID,
// and that there is none outside the tool node.
func TestCallIDInContext(t *testing.T) {
	type args struct {
		N int `json:"n"`
	}
	var mu sync.Mutex
	seen := map[int]string{}
	probe := tool.MustFunc("probe", "records its call ID", func(ctx context.Context, a args) (string, error) {
		id, ok := tool.CallID(ctx)
		if !ok {
			t.Error("no call ID inside the tool node")
		}
		mu.Lock()
		seen[a.N] = id
		mu.Unlock()
		return "ok", nil
	}, tool.ReadOnly())
	m := &fakeModel{replies: []llm.Message{
		llm.Assistant("", call("c-one", "probe", `{"n":1}`), call("c-two", "probe", `{"n":2}`)),
	}}
	g := agentGraph(t, m, newNode(t, tool.NodeConfig{Tools: []tool.Tool{probe}}))
	if _, err := g.Invoke(context.Background(), userInput("go")); err != nil {
		t.Fatal(err)
	}
	if seen[1] != "c-one" || seen[2] != "c-two" {
		t.Errorf("call IDs seen by the tool = %v, want 1→c-one, 2→c-two", seen)
	}
	if id, ok := tool.CallID(context.Background()); ok || id != "" {
		t.Errorf("CallID outside a call = %q, %v", id, ok)
	}
}
