package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/internal/webhook"
)

// A run with a webhook POSTs its final state, signed, to the URL when it
// ends; a failing endpoint is retried (a River job) until it answers 2xx.
func TestWebhookSignedAndRetried(t *testing.T) {
	var calls atomic.Int32
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first attempt fails
			return
		}
		if r.Header.Get(webhook.SignatureHeader) != webhook.Sign("s3cret", body) {
			t.Errorf("signature %q does not sign %s", r.Header.Get(webhook.SignatureHeader), body)
		}
		got <- body
	}))
	defer srv.Close()
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"),
		Webhooks: Webhooks{Secret: "s3cret", AllowPrivate: true, RetryBase: 10 * time.Millisecond, Attempts: 3}}, nil)
	const th = "6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a92"
	post(t, r.url+"/threads", `{"thread_id":"`+th+`"}`)
	code, body, _ := post(t, r.url+"/threads/"+th+"/runs", `{"assistant_id":"echo","input":{"log":["hi"]},"webhook":"`+srv.URL+`/hook"}`)
	if code != 200 {
		t.Fatalf("create run: %d %s", code, body)
	}
	var run struct {
		ID string `json:"run_id"`
	}
	_ = json.Unmarshal([]byte(body), &run)
	select {
	case b := <-got:
		var hook struct {
			RunID  string          `json:"run_id"`
			Thread string          `json:"thread_id"`
			Status string          `json:"status"`
			Values json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(b, &hook); err != nil {
			t.Fatal(err)
		}
		if hook.RunID != run.ID || hook.Thread != th || hook.Status != "success" || !strings.Contains(string(hook.Values), "echo hi") {
			t.Errorf("webhook body %s", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no successful webhook after %d calls", calls.Load())
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the endpoint was called %d times, want 2 (one failure, one retry)", n)
	}
}

// Without allow_private, a webhook reaching a loopback address is refused
// at create, naming /webhook (runs and crons alike).
func TestWebhookToLoopbackRefused(t *testing.T) {
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), CronInterval: time.Hour}, nil)
	for _, path := range []string{"/runs", "/runs/crons"} {
		code, body, _ := post(t, r.url+path, `{"assistant_id":"echo","schedule":"* * * * *","input":{"log":["hi"]},"webhook":"http://127.0.0.1:9/hook"}`)
		if code != 422 || !strings.Contains(body, "/webhook") || !strings.Contains(body, "private") {
			t.Errorf("POST %s with a loopback webhook: %d %s", path, code, body)
		}
	}
}
