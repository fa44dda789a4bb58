package api

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A streamed run answers with the run's Content-Location and its stream's
// Location (what the SDK reads), then metadata {run_id, thread_id}, the
// run's events with ids 1, 2, ... in order, and end.
func TestStreamRunSendsMetadataEventsAndEnd(t *testing.T) {
	e := newRunEnv(t)
	resp := e.open(context.Background(), "POST", "/threads/t1/runs/stream", map[string]any{
		"assistant_id": "steps-a", "input": map[string]any{"log": []string{"go"}},
		"stream_mode": []string{"values", "updates"}, "if_not_exists": "create",
	})
	loc, cloc := resp.Header.Get("Location"), resp.Header.Get("Content-Location")
	evs := e.events(resp)
	m := regexp.MustCompile(`^/threads/t1/runs/([^/]+)$`).FindStringSubmatch(cloc)
	if m == nil {
		t.Fatalf("Content-Location %q: want /threads/t1/runs/{run_id}", cloc)
	}
	runID := m[1]
	if loc != cloc+"/stream" {
		t.Errorf("Location %q, want %q", loc, cloc+"/stream")
	}
	got := names(evs)
	if got[0] != "metadata" || !strings.Contains(string(evs[0].Data), `"run_id":"`+runID+`"`) || !strings.Contains(string(evs[0].Data), `"thread_id":"t1"`) {
		t.Errorf("first event %s %s: want metadata with run and thread", evs[0].Event, evs[0].Data)
	}
	if got[len(got)-1] != "end" {
		t.Errorf("events %v: want end last", got)
	}
	if !containsAll(got, "values", "updates") {
		t.Errorf("events %v: want values and updates", got)
	}
	for i, ev := range evs[:len(evs)-1] {
		if ev.ID != strconv.Itoa(i+1) {
			t.Errorf("event %d (%s) has id %q, want %d", i, ev.Event, ev.ID, i+1)
		}
	}
	last := evs[len(evs)-2]
	if last.Event != "values" || !strings.Contains(string(last.Data), `"log":["go","hi","done"]`) {
		t.Errorf("last data event %s %s: want the final values", last.Event, last.Data)
	}
	if st := e.run("t1", runID)["status"]; st != "success" {
		t.Errorf("run status %v", st)
	}
}

// messages-tuple streams the scripted model's reply as message chunks.
func TestStreamMessagesTuple(t *testing.T) {
	e := newRunEnv(t)
	e.model.Reply(llmText("hello there, friend"))
	evs := e.events(e.open(context.Background(), "POST", "/threads/c1/runs/stream", map[string]any{
		"assistant_id": "chat-a", "if_not_exists": "create", "stream_mode": "messages-tuple",
		"input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}},
	}))
	var chunks int
	var text strings.Builder
	for _, ev := range evs {
		if ev.Event != "messages" {
			continue
		}
		chunks++
		tuple := decode[[]map[string]any](t, ev.Data)
		if len(tuple) != 2 {
			t.Fatalf("messages event %s: want [chunk, metadata]", ev.Data)
		}
		if c, ok := tuple[0]["content"].(string); ok {
			text.WriteString(c)
		}
	}
	if chunks < 2 || text.String() != "hello there, friend" {
		t.Errorf("%d chunks spelling %q; events %v", chunks, text.String(), names(evs))
	}
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, s := range list {
			found = found || s == w
		}
		if !found {
			return false
		}
	}
	return true
}

// A finished run reports its usage: tokens and model calls from the model
// calls it made, and the time it executed.
func TestRunUsage(t *testing.T) {
	e := newRunEnv(t)
	e.model.Reply(llmtest.Text("one").WithUsage(llm.Usage{InputTokens: 120, OutputTokens: 7, Requests: 1}).After(20 * time.Millisecond))
	st, _, body := e.do("POST", "/threads/u1/runs", map[string]any{
		"assistant_id": "chat-a", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}}},
	})
	if st != 200 {
		t.Fatalf("create: %d %s", st, body)
	}
	run := decode[map[string]any](t, body)
	id := run["run_id"].(string)
	if st, _, body := e.do("GET", "/threads/u1/runs/"+id+"/join", nil); st != 200 {
		t.Fatalf("join: %d %s", st, body)
	}
	_, _, body = e.do("GET", "/threads/u1/runs/"+id, nil)
	var got struct {
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
			ModelCalls   int64 `json:"model_calls"`
			DurationMS   int64 `json:"duration_ms"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	u := got.Usage
	if u.InputTokens != 120 || u.OutputTokens != 7 || u.ModelCalls != 1 || u.DurationMS < 20 {
		t.Fatalf("usage %+v, want 120 in, 7 out, 1 call, at least 20 ms; run %s", u, body)
	}
}
