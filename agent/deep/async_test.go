package deep_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

func TestAsyncConfigErrors(t *testing.T) {
	remote, err := remotegraph.New(remotegraph.Config{Name: "r", URL: "http://127.0.0.1:1", Assistant: "a", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	_, err = deep.Async([]deep.AsyncSubAgent{{Name: "a b", Description: "x", Remote: remote}, {Name: "n"}, {Name: "ok", Description: "x", Remote: remote}, {Name: "ok", Description: "x", Remote: remote}})
	for _, want := range []string{`"a b"`, `"n" has no Remote`, `two background sub-agents are named "ok"`} {
		wantErr(t, err, want)
	}
}

// Unknown task IDs and sub-agents are argument errors that name what
// there is; nothing reaches the server.
func TestAsyncToolsRefuseUnknownTasks(t *testing.T) {
	remote, err := remotegraph.New(remotegraph.Config{Name: "r", URL: "http://127.0.0.1:1", Assistant: "a", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	m := llmtest.New()
	m.When(results(0), llmtest.ToolCalls(
		llmtest.Call(deep.CheckAsyncTool, `{"task_id":"nope"}`),
		llmtest.Call(deep.StartAsyncTool, `{"subagent_type":"nobody","description":"x"}`),
		llmtest.Call(deep.ListAsyncTool, `{}`))).Repeat()
	m.Otherwise(llmtest.Text("ok"))
	g, err := deep.New(deep.Config{Model: m, AsyncSubAgents: []deep.AsyncSubAgent{{Name: "remote", Description: "x", Remote: remote}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), deep.Input("go"), graph.WithStore(store.NewMemory()), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("a")); err != nil {
		t.Fatal(err)
	}
	r := m.LastRequest()
	var got []string
	for _, msg := range r.Messages[len(r.Messages)-3:] {
		got = append(got, msg.Text())
	}
	if !strings.Contains(got[0], `there is no task "nope"; the tasks are: none`) || !strings.Contains(got[1], `there is no background sub-agent "nobody"; they are remote`) || got[2] != "You have no background tasks." {
		t.Errorf("results %q", got)
	}
}
