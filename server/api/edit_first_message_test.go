package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
)

// humanTexts lists the contents of the human messages of a state's values.
func humanTexts(t *testing.T, values any) []string {
	t.Helper()
	m, _ := values.(map[string]any)
	list, _ := m["messages"].([]any)
	var out []string
	for _, v := range list {
		msg, _ := v.(map[string]any)
		if msg["type"] == "human" {
			c, _ := msg["content"].(string)
			out = append(out, c)
		}
	}
	return out
}

// Editing the first message of a chat as LangGraph's Agent Chat UI does:
// over the HTTP API, a thread with two turns; in its history, the
// checkpoint where the first human message first appears has a parent (the
// pre-input checkpoint: step -1, source input, no messages, next
// __start__); a run from that parent with another first message branches:
// the thread's state then holds the edited message and not the original,
// and the original branch stays in the history.
func TestEditFirstMessageBranches(t *testing.T) {
	e := newRunEnv(t)
	e.model.Otherwise(llmtest.Text("ok"))
	// The run routes and the thread routes on one server.
	mux := http.NewServeMux()
	handlers := e.api.Handlers()
	var routes []spec.Route
	for _, r := range spec.Routes() {
		if handlers[r.OperationID] != nil {
			routes = append(routes, r)
		}
	}
	if err := spec.Register(mux, routes, handlers); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.srv, srv = srv, e.srv
	t.Cleanup(func() { e.srv = srv })
	human := func(text string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"type": "human", "content": text}}}
	}
	wait := func(body map[string]any) {
		t.Helper()
		body["assistant_id"], body["if_not_exists"] = "chat-a", "create"
		if st, _, b := e.do("POST", "/threads/t1/runs/wait", body); st != http.StatusOK {
			t.Fatalf("wait: %d %s", st, b)
		}
	}
	wait(map[string]any{"input": human("first")})
	wait(map[string]any{"input": human("second")})
	history := func() []wire.ThreadState {
		t.Helper()
		st, _, b := e.do("POST", "/threads/t1/history", map[string]any{"limit": 100})
		if st != http.StatusOK {
			t.Fatalf("history: %d %s", st, b)
		}
		return decode[[]wire.ThreadState](t, b)
	}
	hist := history()
	// Two checkpoints per turn before the reply: pre-input, input applied.
	if len(hist) != 6 {
		t.Errorf("history of two turns: %d checkpoints, want 6", len(hist))
	}
	originalHead := *hist[0].Checkpoint.CheckpointID
	var first *wire.ThreadState // the oldest checkpoint holding "first"
	for i := range hist {
		if h := humanTexts(t, hist[i].Values); len(h) > 0 && h[0] == "first" {
			first = &hist[i]
		}
	}
	if first == nil || first.ParentCheckpoint == nil || first.ParentCheckpoint.CheckpointID == nil {
		t.Fatalf("the checkpoint where the first message appears has no parent: %+v", first)
	}
	parentID := *first.ParentCheckpoint.CheckpointID
	var parent wire.ThreadState
	for _, h := range hist {
		if *h.Checkpoint.CheckpointID == parentID {
			parent = h
		}
	}
	if len(humanTexts(t, parent.Values)) != 0 || strings.Join(parent.Next, ",") != "__start__" || parent.Metadata["source"] != "input" || parent.Metadata["step"] != float64(-1) {
		t.Errorf("the parent: values %v next %v metadata %v", parent.Values, parent.Next, parent.Metadata)
	}
	if len(parent.Tasks) != 1 || parent.Tasks[0].Name != "__start__" {
		t.Errorf("the parent's tasks: %+v", parent.Tasks)
	}
	wait(map[string]any{"input": human("edited"), "checkpoint_id": parentID})
	st, _, b := e.do("GET", "/threads/t1/state", nil)
	if st != http.StatusOK {
		t.Fatalf("state: %d %s", st, b)
	}
	now := decode[wire.ThreadState](t, b)
	if got := strings.Join(humanTexts(t, now.Values), ","); got != "edited" {
		t.Errorf("the thread's messages after the edit: %q, want the edited one only", got)
	}
	found := false
	for _, h := range history() {
		if *h.Checkpoint.CheckpointID == originalHead {
			found = strings.Join(humanTexts(t, h.Values), ",") == "first,second"
		}
	}
	if !found {
		t.Error("the original branch's head is gone from the history")
	}
}
