package server

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// A run records its graph and assistant in its thread's metadata, as
// LangGraph does, so a search by graph_id (how Agent Chat UI lists a
// graph's threads) finds the thread: on a thread created beforehand (its
// other keys kept, graph_id and assistant_id replaced) and on one the run
// creates (if_not_exists "create").
func TestRunsTagTheirThreadWithGraphAndAssistant(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db")}, nil)
	const made, created = "0b6f3c2e-1d4a-4e5b-8c7d-9e0f1a2b3c4d", "5c4b3a29-1807-46f5-a4e3-d2c1b0a99887"
	if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+made+`","metadata":{"graph_id":"old","user":"ann"}}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	if code, body, _ := post(t, r.url+"/threads/"+made+"/runs/wait", `{"assistant_id":"echo","input":{"log":["a"]}}`); code != 200 {
		t.Fatalf("run: %d %s", code, body)
	}
	if code, body, _ := post(t, r.url+"/threads/"+created+"/runs/wait", `{"assistant_id":"echo","input":{"log":["b"]},"if_not_exists":"create"}`); code != 200 {
		t.Fatalf("run on a new thread: %d %s", code, body)
	}
	code, body, _ := post(t, r.url+"/threads/search", `{"metadata":{"graph_id":"echo"}}`)
	var found []struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &found); code != 200 || err != nil {
		t.Fatalf("search: %d %s (%v)", code, body, err)
	}
	byID := map[string]map[string]any{}
	for _, th := range found {
		byID[th.ThreadID] = th.Metadata
	}
	for _, id := range []string{made, created} {
		md, ok := byID[id]
		if !ok {
			t.Errorf("thread %s is not found by graph_id echo: %s", id, body)
			continue
		}
		if md["assistant_id"] != DefaultAssistantID("echo") {
			t.Errorf("thread %s: assistant_id %v, want %s", id, md["assistant_id"], DefaultAssistantID("echo"))
		}
	}
	if md := byID[made]; md != nil && md["user"] != "ann" {
		t.Errorf("the thread's own metadata was lost: %v", md)
	}
}
