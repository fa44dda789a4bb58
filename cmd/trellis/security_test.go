package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/config"
)

// attacker stands for a host an API client names: it records every
// request and the Authorization header it came with, and answers with a
// status and body that must never reach the client.
type attacker struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits int
	auth []string
}

func newAttacker(t *testing.T) *attacker {
	a := &attacker{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.hits++
		a.auth = append(a.auth, r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, `{"error":{"message":"internal-admin-panel-v2 says hello"}}`)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *attacker) seen() (int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits, append([]string(nil), a.auth...)
}

// serveFile runs `trellis serve` with the given trellis.yaml on a free
// loopback port and returns its URL; it stops when the test ends.
func serveFile(t *testing.T, yaml string) string {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "trellis.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--config", file, "--db", filepath.Join(dir, "t.db")})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "trellis serve listening" {
				if u, _ := rec["url"].(string); u != "" {
					return u
				}
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
	}
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The operator's key never goes to a host an API client names (issue 21,
// point 1): an assistant naming a spec with its own base URL is refused
// with a 422 at the field, naming the declared models — for the agent
// and for an app's nested model fields, on create and on update — and no
// run ever reaches the host.
func TestRequestCannotSendTheKeyToItsHost(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-operator-secret")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	evil := newAttacker(t)
	url := serveFile(t, "models:\n  default: openai-compatible:http://127.0.0.1:1/v1#operator\n  fast: openai:gpt-4o-mini\n")
	spec := "openai-compatible:" + evil.srv.URL + "/v1#m"
	for _, c := range []struct{ graph, config, pointer string }{
		{"agent", `{"configurable":{"model":"` + spec + `"}}`, "/config/configurable/model"},
		{"planner", `{"configurable":{"model":"` + spec + `"}}`, "/config/configurable/model"},
		{"planner", `{"configurable":{"planner":{"phases":{"plan":{"model":"` + spec + `"}}}}}`, "/config/configurable/planner/phases/plan/model"},
		{"agent", `{"configurable":{"history":{"policy":"summarize","model":"` + spec + `"}}}`, "/config/configurable/history/model"},
	} {
		code, body := call(t, http.MethodPost, url+"/assistants", `{"graph_id":"`+c.graph+`","config":`+c.config+`}`)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, c.pointer) || !strings.Contains(body, "default, fast") {
			t.Errorf("create %s with %s: %d %s\nwant a 422 at %s naming the models default, fast", c.graph, c.config, code, body, c.pointer)
		}
	}
	// An assistant made with a declared model cannot be switched to the
	// host either.
	code, body := call(t, http.MethodPost, url+"/assistants", `{"graph_id":"agent","assistant_id":"a1","config":{"configurable":{"model":"fast"}}}`)
	if code != http.StatusOK {
		t.Fatalf("create with a declared name: %d %s", code, body)
	}
	code, body = call(t, http.MethodPatch, url+"/assistants/a1", `{"config":{"configurable":{"model":"`+spec+`"}}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "/config/configurable/model") {
		t.Errorf("patch to the host's spec: %d %s", code, body)
	}
	code, body = call(t, http.MethodPost, url+"/runs/wait", `{"assistant_id":"a1","input":{"messages":[{"role":"user","content":"hi"}]},"config":{"configurable":{"model":"`+spec+`"}}}`)
	if code != http.StatusOK {
		t.Fatalf("run: %d %s", code, body)
	}
	if hits, auth := evil.seen(); hits != 0 {
		t.Errorf("the client's host got %d requests (Authorization %q)", hits, auth)
	}
}

// When the operator lets requests name any openai-compatible server (and
// private ones), the server goes there, but without the operator's key
// (provider/openai sends OPENAI_API_KEY only to api.openai.com or
// OPENAI_BASE_URL), and the run's error does not repeat what the host
// answered.
func TestAllowedRequestModelGetsNoKeyAndNoEcho(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-operator-secret")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	evil := newAttacker(t)
	url := serveFile(t, "models:\n  default: openai-compatible:http://127.0.0.1:1/v1#operator\nrequest_models:\n  allow: [\"openai-compatible:*\"]\n  allow_private: true\n")
	spec := "openai-compatible:" + evil.srv.URL + "/v1#m"
	code, body := call(t, http.MethodPost, url+"/assistants", `{"graph_id":"agent","assistant_id":"a1","config":{"configurable":{"model":"`+spec+`"}}}`)
	if code != http.StatusOK {
		t.Fatalf("create with an allowed spec: %d %s", code, body)
	}
	code, body = call(t, http.MethodPost, url+"/runs/wait", `{"assistant_id":"a1","input":{"messages":[{"role":"user","content":"hi"}]}}`)
	hits, auth := evil.seen()
	if hits == 0 {
		t.Fatalf("the allowed server was never called; run: %d %s", code, body)
	}
	for _, a := range auth {
		if a != "" {
			t.Errorf("the request-chosen server got Authorization %q", a)
		}
	}
	if !strings.Contains(body, "__error__") || strings.Contains(body, "HTTP 418") || strings.Contains(body, "internal-admin-panel") || strings.Contains(strings.ToLower(body), "teapot") {
		t.Errorf("run answered %d %s: want an error that does not echo the host's status or body", code, body)
	}
}

// Without allow_private, a request-chosen server on a loopback, private
// or link-local address is refused at dial time (issue 21, point 2): the
// host gets nothing and the run's error says why without a status.
func TestRequestModelCannotReachPrivateAddresses(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	internal := newAttacker(t)
	url := serveFile(t, "models:\n  default: openai-compatible:http://127.0.0.1:1/v1#operator\nrequest_models:\n  allow: [\"openai-compatible:*\"]\n")
	spec := "openai-compatible:" + internal.srv.URL + "/v1#m"
	code, body := call(t, http.MethodPost, url+"/assistants", `{"graph_id":"agent","assistant_id":"a1","config":{"configurable":{"model":"`+spec+`"}}}`)
	if code != http.StatusOK {
		t.Fatalf("create with an allowed spec: %d %s", code, body)
	}
	code, body = call(t, http.MethodPost, url+"/runs/wait", `{"assistant_id":"a1","input":{"messages":[{"role":"user","content":"hi"}]}}`)
	if hits, _ := internal.seen(); hits != 0 {
		t.Errorf("the loopback server got %d requests", hits)
	}
	if !strings.Contains(body, "not public") || strings.Contains(body, "HTTP 418") {
		t.Errorf("run answered %d %s: want an error saying the address is not public", code, body)
	}
}

// A long-form models entry's api_key_env goes to its base_url, and
// OPENAI_API_KEY does not (the resolver `trellis serve` builds).
func TestModelEntryKeyGoesToItsServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-operator-openai")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("VLLM_TEST_KEY", "sk-vllm")
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	file, err := config.Parse([]byte("models:\n  keyed:\n    provider: openai-compatible\n    base_url: "+srv.URL+"/v1\n    model: m\n    api_key_env: VLLM_TEST_KEY\n  bare:\n    provider: openai-compatible\n    base_url: "+srv.URL+"/w1\n    model: m\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, models, err := serverConfig(serveFlags{}, file, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"keyed": "Bearer sk-vllm", "bare": ""} {
		m, err := models.Resolve(models.Named[name])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
		if auth := <-got; auth != want {
			t.Errorf("%s: the server got Authorization %q, want %q", name, auth, want)
		}
	}
}
