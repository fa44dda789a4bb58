package deep_test

import (
	"context"
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

// Two sub-agents run at once, each waiting for an approval: both requests
// surface on the agent's thread, and answering them by ID (one approved,
// one rejected) finishes each sub-agent as decided, without running the
// approved write twice.
func TestParallelSubAgentsAskOnTheAgentsThread(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	task := func(n string) string { return `{"subagent_type":"general-purpose","description":"Save ` + n + `"}` }
	m.When(llmtest.And(main, results(0)), llmtest.ToolCalls(llmtest.Call(deep.TaskTool, task("one")), llmtest.Call(deep.TaskTool, task("two")))).Repeat()
	for _, n := range []string{"one", "two"} {
		m.When(llmtest.And(sub, llmtest.LastUserContains("Save "+n), results(0)),
			llmtest.ToolCalls(llmtest.Call(deep.WriteFileTool, `{"path":"/`+n+`.txt","content":"`+n+`"}`))).Repeat()
		m.When(llmtest.And(sub, llmtest.LastUserContains("Save "+n), results(1)), llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
			last := r.Messages[len(r.Messages)-1]
			if last.IsError {
				return llmtest.Text(n + ": not saved")
			}
			return llmtest.Text(n + ": saved")
		})).Repeat()
	}
	m.When(llmtest.And(main, results(2)), llmtest.Text("finished")).Repeat()
	g, err := deep.New(deep.Config{Model: m, Policy: tool.Policy{deep.WriteFileTool: tool.RequireApproval()}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	opts := []graph.RunOption{graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("p")}
	res, err := g.Invoke(ctx, deep.Input("save both"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 2 {
		t.Fatalf("want two approvals: %v, %d interrupts", err, len(res.Interrupts))
	}
	answers := map[string]any{}
	for _, in := range res.Interrupts {
		req, _ := tool.ApprovalFrom(in)
		if strings.Contains(string(req.Arguments), "one") {
			answers[in.ID] = tool.Approve()
		} else {
			answers[in.ID] = tool.Reject("no")
		}
	}
	res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range react.Messages.Get(res.State) {
		if msg.Role == llm.RoleTool && msg.ToolName == deep.TaskTool {
			got = append(got, msg.Text())
		}
	}
	if len(got) != 2 || got[0] != "one: saved" || !strings.HasPrefix(got[1], "two: not saved") || !strings.Contains(got[1], "rejected") {
		t.Errorf("task results %q", got)
	}
	fs, _ := deep.Files(deep.FilesConfig{})
	inRun(t, st, "p", func(ctx context.Context) {
		if c, err := fs.ReadFile(ctx, "/one.txt"); c != "one" || err != nil {
			t.Errorf("/one.txt: %q %v", c, err)
		}
		if _, err := fs.ReadFile(ctx, "/two.txt"); err == nil {
			t.Error("the rejected write happened")
		}
	})
	writes := 0
	for _, r := range m.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleTool && msg.ToolName == deep.WriteFileTool && strings.HasPrefix(msg.Text(), "Wrote /one.txt") {
				writes++
			}
		}
	}
	if writes != 1 {
		t.Errorf("the approved write's result appears in %d requests, want 1", writes)
	}
}
