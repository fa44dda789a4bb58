package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/internal/webhook"
)

// rpc posts an A2A 1.0 JSON-RPC request with a key and returns the
// answer's result or error.
func a2aRPC(t *testing.T, base, key, assistant, method, params string) (result map[string]any, errCode float64) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/a2a/"+assistant, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code float64 `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: status %d: %v", method, resp.StatusCode, err)
	}
	if out.Error != nil {
		return nil, out.Error.Code
	}
	return out.Result, 0
}

// An A2A task is its tenant's: another tenant's key, through its own
// agent of the same graph, gets task-not-found for it; the card needs a
// key (and names the key schemes) unless a2a.public_card serves it
// without one.
func TestA2ATasksStayWithTheirTenant(t *testing.T) {
	for _, public := range []bool{false, true} {
		database := filepath.Join(t.TempDir(), "t.db")
		keyA, keyB := mkKey(t, database, "tenant-a"), mkKey(t, database, "tenant-b")
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: database, Logger: quiet(), A2APublicCard: public})
		if err != nil {
			t.Fatal(err)
		}
		model := llmtest.New()
		model.Otherwise(llmtest.Text("hello"))
		if err := s.Register("chat", chatSpec(model)); err != nil {
			t.Fatal(err)
		}
		r := serveInBackground(t, s)
		res, code := a2aRPC(t, r.url, keyA, "chat", "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`)
		task, _ := res["task"].(map[string]any)
		if code != 0 || task == nil {
			t.Fatalf("A's send: %v %v", res, code)
		}
		id, _ := task["id"].(string)
		if _, code := a2aRPC(t, r.url, keyB, "chat", "GetTask", `{"id":"`+id+`"}`); code != -32001 {
			t.Errorf("B reads A's task through its own agent: code %v, want -32001 (task not found)", code)
		}
		if _, code := a2aRPC(t, r.url, keyB, "chat", "CancelTask", `{"id":"`+id+`"}`); code != -32001 {
			t.Errorf("B cancels A's task: code %v, want -32001", code)
		}
		if got, code := a2aRPC(t, r.url, keyA, "chat", "GetTask", `{"id":"`+id+`"}`); code != 0 || got["id"] != id {
			t.Errorf("A reads its task: %v %v", got, code)
		}
		c := client{t: t, base: r.url}
		st, body, _ := c.do("GET", "/.well-known/agent-card.json", "", "")
		if !public && st != http.StatusUnauthorized {
			t.Errorf("the card without a key: %d %s; want 401", st, body)
		}
		if public && (st != http.StatusOK || !strings.Contains(body, `"securitySchemes"`)) {
			t.Errorf("the public card without a key: %d %s; want the card naming the key schemes", st, body)
		}
		c.key = keyB
		if st, body, _ := c.do("GET", "/a2a/chat/.well-known/agent-card.json", "", ""); st != http.StatusOK || !strings.Contains(body, r.url+"/a2a/") || !strings.Contains(body, `"securitySchemes"`) {
			t.Errorf("B's card with its key: %d %s", st, body)
		}
	}
}

// A task's push notification goes out through the webhook queue when its
// run ends: signed like the run webhooks, with the client's token, the
// task completed in its body; a private URL is refused unless the
// operator allows private webhook addresses.
func TestA2APushThroughWebhooks(t *testing.T) {
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer recv.Close()
	for _, allowPrivate := range []bool{false, true} {
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet(),
			Webhooks: Webhooks{Secret: "s3cret", AllowPrivate: allowPrivate, RetryBase: 10 * time.Millisecond, Attempts: 3}})
		if err != nil {
			t.Fatal(err)
		}
		model := llmtest.New()
		model.Otherwise(llmtest.Text("hello"))
		if err := s.Register("chat", chatSpec(model)); err != nil {
			t.Fatal(err)
		}
		r := serveInBackground(t, s)
		res, code := a2aRPC(t, r.url, "", "chat", "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},
			"configuration":{"taskPushNotificationConfig":{"url":"`+recv.URL+`/push","token":"tok-1"}}}`)
		if !allowPrivate {
			if code != -32602 {
				t.Errorf("a loopback push URL without webhooks.allow_private: %v %v; want -32602", res, code)
			}
			continue
		}
		task, _ := res["task"].(map[string]any)
		if code != 0 || task == nil {
			t.Fatalf("send: %v %v", res, code)
		}
		select {
		case req := <-got:
			b := <-bodies
			if req.Header.Get(webhook.SignatureHeader) != webhook.Sign("s3cret", b) || req.Header.Get("X-A2A-Notification-Token") != "tok-1" {
				t.Errorf("push headers %v", req.Header)
			}
			var sr struct {
				Task struct {
					ID     string `json:"id"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"task"`
			}
			if err := json.Unmarshal(b, &sr); err != nil || sr.Task.ID != task["id"] || sr.Task.Status.State != "TASK_STATE_COMPLETED" {
				t.Errorf("push body %s (%v)", b, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no push notification")
		}
	}
}
