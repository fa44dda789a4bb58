package eval_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/eval"
)

// A server's failures reach the runner as the run's error (a failed run)
// or the call's (a refused request), each with the server's words.
func TestServerTargetErrors(t *testing.T) {
	var gotKey, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key")
		switch {
		case r.URL.Path == "/threads":
			w.Write([]byte(`{}`))
		case strings.HasSuffix(r.URL.Path, "/runs/wait") && strings.Contains(r.URL.Path, "broken"):
			b, _ := io.ReadAll(r.Body)
			gotBody = string(b)
			w.Write([]byte(`{"messages":[],"__error__":{"error":"NodeError","message":"the model timed out"}}`))
		case strings.HasSuffix(r.URL.Path, "/runs/wait"):
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"title":"Not Found","detail":"assistant \"nope\" not found"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tg := &eval.ServerTarget{URL: srv.URL + "/", APIKey: "k1", Assistant: "planner", Client: srv.Client()}
	out, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "broken", Input: eval.Input{Message: "hi", Config: map[string]any{"x": 1}},
		Metadata: map[string]string{"eval_case": "c"}})
	if err != nil || out.Error != "NodeError: the model timed out" {
		t.Fatalf("a failed run: %+v, %v", out, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(gotBody), &body); err != nil {
		t.Fatal(err)
	}
	if gotKey != "k1" || body["assistant_id"] != "planner" || !strings.Contains(gotBody, `{"content":"hi","type":"human"}`) ||
		!strings.Contains(gotBody, `"configurable":{"x":1}`) || !strings.Contains(gotBody, `"eval_case":"c"`) {
		t.Fatalf("request: key %q body %s", gotKey, gotBody)
	}
	_, err = tg.Run(context.Background(), eval.RunRequest{ThreadID: "t", Input: eval.Input{Message: "hi"}})
	if err == nil || !strings.Contains(err.Error(), `404 Not Found: assistant "nope" not found`) {
		t.Fatalf("a refused run: %v", err)
	}
	if _, err := tg.Thread(context.Background(), "t"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a missing thread: %v", err)
	}
}

// A target's assistant version goes with a case's first run, and not with
// the resume that answers its interrupt (the server keeps the thread's
// version); a target without one sends none.
func TestServerTargetAssistantVersion(t *testing.T) {
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runs/wait") {
			b, _ := io.ReadAll(r.Body)
			var body map[string]any
			_ = json.Unmarshal(b, &body)
			bodies = append(bodies, body)
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tg := &eval.ServerTarget{URL: srv.URL, Assistant: "a", AssistantVersion: 3, Client: srv.Client()}
	if _, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "t1", Input: eval.Input{Message: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "t1", Resume: map[string]json.RawMessage{"i1": json.RawMessage(`"yes"`)}}); err != nil {
		t.Fatal(err)
	}
	tg.AssistantVersion = 0
	if _, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "t2", Input: eval.Input{Message: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d runs sent, want 3", len(bodies))
	}
	_, resumeHas := bodies[1]["assistant_version"]
	_, latestHas := bodies[2]["assistant_version"]
	if bodies[0]["assistant_version"] != float64(3) || resumeHas || latestHas {
		t.Fatalf("assistant_version sent: first run %v, resume %v, unpinned %v; want 3, none, none",
			bodies[0]["assistant_version"], bodies[1]["assistant_version"], bodies[2]["assistant_version"])
	}
}

// A target's context and config (an assistant version's) go with every
// first run, the case's own merged over them key by key; the target's
// maps are left as they were.
func TestServerTargetContextAndConfig(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runs/wait") {
			b, _ := io.ReadAll(r.Body)
			body = nil
			_ = json.Unmarshal(b, &body)
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tg := &eval.ServerTarget{URL: srv.URL, Assistant: "a", Client: srv.Client(),
		Context: map[string]any{"answer": "blue", "tone": "dry"},
		Config:  map[string]any{"recursion_limit": 5, "configurable": map[string]any{"model": "m1", "style": "short"}}}
	if _, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "t1", Input: eval.Input{Message: "hi",
		Context: map[string]any{"tone": "warm"}, Config: map[string]any{"style": "long"}}}); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(map[string]any{"context": body["context"], "config": body["config"]})
	want := `{"config":{"configurable":{"model":"m1","style":"long"},"recursion_limit":5},"context":{"answer":"blue","tone":"warm"}}`
	if string(got) != want {
		t.Fatalf("the run's context and config: %s, want %s", got, want)
	}
	if tg.Context["tone"] != "dry" || tg.Config["configurable"].(map[string]any)["style"] != "short" {
		t.Fatalf("the target's maps changed: %v %v", tg.Context, tg.Config)
	}
	// Without a case's own, the target's are sent as they are.
	if _, err := tg.Run(context.Background(), eval.RunRequest{ThreadID: "t2", Input: eval.Input{Message: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(body["context"]); string(got) != `{"answer":"blue","tone":"dry"}` {
		t.Fatalf("the run's context without the case's: %s", got)
	}
}
