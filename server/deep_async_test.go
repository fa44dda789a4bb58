package server

import (
	"context"
	"regexp"
	"strings"
	"testing"

	agentdeep "github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/apps/deep"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

var taskID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// A deep agent hands a task to a background sub-agent served by trellis
// serve (the deep app), checks on it until it waits for an approval,
// updates it with another message (a new run on the same remote thread),
// checks its answer, cancels it, and keeps the task in its state.
func TestDeepAgentBackgroundSubAgentOnTheService(t *testing.T) {
	ctx := context.Background()
	r := servedApps(t)
	remote, err := remotegraph.New(remotegraph.Config{Name: "briefs", URL: r.url, Assistant: DefaultAssistantID(deep.Name), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()

	m := llmtest.New()
	m.Otherwise(llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
		last := r.Messages[len(r.Messages)-1]
		text := last.Text()
		id := taskID.FindString(text)
		switch {
		case last.Role == llm.RoleUser && strings.HasPrefix(text, "start"):
			return llmtest.ToolCalls(llmtest.Call(agentdeep.StartAsyncTool, `{"subagent_type":"briefs","description":"`+deep.Task+`"}`))
		case last.Role == llm.RoleUser:
			return llmtest.Text("nothing to do")
		case strings.HasPrefix(text, "Started task"), strings.Contains(text, "is still"), strings.Contains(text, "goes on with the new instructions"):
			return llmtest.ToolCalls(llmtest.Call(agentdeep.CheckAsyncTool, `{"task_id":"`+id+`"}`))
		case strings.Contains(text, "is waiting for an answer"):
			return llmtest.ToolCalls(llmtest.Call(agentdeep.UpdateAsyncTool, `{"task_id":"`+id+`","message":"Forget the brief. Book me a flight to Rome."}`))
		case strings.Contains(text, "is done") && updated(r):
			return llmtest.ToolCalls(llmtest.Call(agentdeep.CancelAsyncTool, `{"task_id":"`+id+`"}`))
		case strings.Contains(text, "is cancelled"):
			return llmtest.ToolCalls(llmtest.Call(agentdeep.ListAsyncTool, `{}`))
		}
		return llmtest.Text("final: " + text)
	}))
	g, err := agentdeep.New(agentdeep.Config{Model: m, AsyncSubAgents: []agentdeep.AsyncSubAgent{{Name: "briefs", Description: "Writes briefs.", Remote: remote}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(ctx, agentdeep.Input("start the support task"), graph.WithStore(store.NewMemory()), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("bg"), graph.WithStepLimit(400))
	if err != nil {
		t.Fatal(err)
	}
	tasks := agentdeep.AsyncTasks.Get(res.State)
	if len(tasks) != 1 {
		t.Fatalf("tasks %+v", tasks)
	}
	var task agentdeep.AsyncTask
	for _, tk := range tasks {
		task = tk
	}
	if task.Agent != "briefs" || task.Status != "cancelled" || task.Description != deep.Task {
		t.Errorf("task %+v", task)
	}
	// The first run stops for the brief's approval on the remote thread;
	// the update abandons it (the remote agent answers the new message),
	// and the check after it reads that answer.
	var seen []string
	for _, msg := range m.Requests() {
		if last := msg.Messages[len(msg.Messages)-1]; last.Role == llm.RoleTool {
			seen = append(seen, last.Text())
		}
	}
	all := strings.Join(seen, "\n")
	if !strings.Contains(all, "is waiting for an answer a person must give on its own thread") || !strings.Contains(all, `"tool":"write_file"`) ||
		!strings.Contains(all, "is done. Its answer:\n"+deep.Scope) {
		t.Errorf("tool results:\n%s", all)
	}
	answer, _ := agentdeep.Answer(res.State)
	if !strings.HasPrefix(answer, "final: - "+task.ID+" (briefs, cancelled)") {
		t.Errorf("answer %q", answer)
	}
}

// updated reports whether the agent already sent the task an update.
func updated(r *llmtest.Request) bool {
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == agentdeep.UpdateAsyncTool {
				return true
			}
		}
	}
	return false
}
