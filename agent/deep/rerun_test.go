package deep_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// A write that ran beside a call waiting for approval is not run again
// when the thread resumes: its result is the one it gave the first time.
func TestWriteBesideAnApprovalRunsOnce(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	m.When(results(0), llmtest.ToolCalls(
		llmtest.Call(deep.WriteFileTool, `{"path":"/a.txt","content":"a"}`),
		llmtest.Call(deep.WriteFileTool, `{"path":"/b.txt","content":"b"}`))).Repeat()
	m.Otherwise(llmtest.Text("done"))
	g, err := deep.New(deep.Config{Model: m, Policy: tool.Policy{deep.WriteFileTool: tool.ApproveIf(func(args json.RawMessage) bool {
		return strings.Contains(string(args), "/a.txt")
	})}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithStore(store.NewMemory()), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("w")}
	if _, err := g.Invoke(ctx, deep.Input("write"), opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("want an approval: %v", err)
	}
	res, err := g.Invoke(ctx, nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range react.Messages.Get(res.State) {
		if msg.Role == llm.RoleTool && !strings.HasPrefix(msg.Text(), "Wrote ") {
			t.Errorf("a write failed: %q", msg.Text())
		}
	}
}
