package provider_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func TestParse(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	cases := []struct {
		spec string
		want provider.Spec
		err  string
	}{
		{spec: "openai:gpt-4o-mini", want: provider.Spec{Provider: "openai", Model: "gpt-4o-mini"}},
		{spec: "anthropic:claude-sonnet-4-5", want: provider.Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{spec: "openai-compatible:http://localhost:11434/v1#qwen2.5", want: provider.Spec{Provider: "openai-compatible", Model: "qwen2.5", BaseURL: "http://localhost:11434/v1"}},
		{spec: "ollama:qwen2.5", want: provider.Spec{Provider: "openai-compatible", Model: "qwen2.5", BaseURL: "http://localhost:11434/v1"}},
		{spec: "gpt-4o", err: "want"},
		{spec: "openai:", err: "want"},
		{spec: "gemini:pro", err: `unknown provider "gemini"`},
		{spec: "openai-compatible:http://localhost:8000/v1", err: "BASE_URL#MODEL"},
		{spec: "openai-compatible:localhost:8000#m", err: "not an http(s) base URL"},
	}
	for _, c := range cases {
		got, err := provider.Parse(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
		if err == nil && c.spec != "ollama:qwen2.5" && got.String() != c.spec {
			t.Errorf("Spec.String() = %q, want %q", got.String(), c.spec)
		}
	}
	t.Setenv("OLLAMA_HOST", "10.0.0.5:11434")
	if s, _ := provider.Parse("ollama:llama3"); s.BaseURL != "http://10.0.0.5:11434/v1" {
		t.Errorf("OLLAMA_HOST not honoured: %q", s.BaseURL)
	}
}

func TestResolveNamesTheModel(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	for spec, name := range map[string]string{
		"openai:gpt-4o-mini":                              "openai:gpt-4o-mini",
		"anthropic:claude-sonnet-4-5":                     "anthropic:claude-sonnet-4-5",
		"openai-compatible:http://127.0.0.1:9/v1#qwen2.5": "openai-compatible:qwen2.5",
	} {
		m, err := provider.Resolve(spec)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", spec, err)
		}
		if m.Name() != name {
			t.Errorf("Resolve(%q).Name() = %q, want %q", spec, m.Name(), name)
		}
	}
	t.Setenv("OPENAI_API_KEY", "")
	if _, err := provider.Resolve("openai:gpt-4o-mini"); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("missing key: err = %v, want it to name OPENAI_API_KEY", err)
	}
}

// TestResolveOpenAICompatibleEndToEnd sends one request through a resolved
// openai-compatible model to a local server and checks the path, headers
// and reply.
func TestResolveOpenAICompatibleEndToEnd(t *testing.T) {
	var gotPath, gotHeader, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotHeader, gotAuth = r.URL.Path, r.Header.Get("X-Team"), r.Header.Get("Authorization")
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"qwen2.5","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer srv.Close()
	m, err := provider.Resolve("openai-compatible:"+srv.URL+"/v1#qwen2.5", provider.WithHeader("X-Team", "blue"), provider.WithAPIKey("local-key"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.Call(context.Background(), m, &llm.Request{Messages: []llm.Message{llm.User("ping")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "pong" || resp.Usage.InputTokens != 3 {
		t.Errorf("reply %q usage %+v", resp.Message.Text(), resp.Usage)
	}
	if gotPath != "/v1/chat/completions" || gotHeader != "blue" || gotAuth != "Bearer local-key" {
		t.Errorf("server saw path %q, X-Team %q, Authorization %q", gotPath, gotHeader, gotAuth)
	}
}
