package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func userReq(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.User(text)}}
}

func TestNameAndHeaders(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	m := rec.model(t, WithHeader("anthropic-beta", "feature-one"), WithHeader("X-Trace-Id", "trace-7"))
	if got, want := m.Name(), "anthropic:"+testModel; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if _, err := m.Generate(t.Context(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	r := rec.only(t)
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	for name, want := range map[string]string{
		"Authorization":     "Bearer test-key", // the v2 SDK sends the key as a bearer token, not x-api-key
		"Anthropic-Version": "2026-10-21",
		"Anthropic-Beta":    "feature-one",
		"X-Trace-Id":        "trace-7",
		"Content-Type":      "application/json",
	} {
		if got := r.Header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if got := r.Header.Get("X-Stainless-Retry-Count"); got != "0" {
		t.Errorf("X-Stainless-Retry-Count = %q, want 0", got)
	}
}

func TestEnvironment(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	t.Setenv("ANTHROPIC_BASE_URL", rec.srv.URL)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "must-not-be-used")

	m, err := New(testModel, WithHTTPClient(rec.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got := rec.only(t).Header.Get("Authorization"); got != "Bearer env-key" {
		t.Errorf("Authorization = %q, want the key from ANTHROPIC_API_KEY", got)
	}

	// Options win over the environment.
	other := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	m, err = New(testModel, WithAPIKey("option-key"), WithBaseURL(other.srv.URL), WithHTTPClient(other.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got := other.only(t).Header.Get("Authorization"); got != "Bearer option-key" {
		t.Errorf("Authorization = %q, want the key from WithAPIKey", got)
	}
	if n := len(rec.requests()); n != 1 {
		t.Errorf("the ANTHROPIC_BASE_URL server got %d requests after WithBaseURL, want still 1", n)
	}
}

func TestNewErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	cases := []struct {
		name  string
		model string
		opts  []Option
		want  string
	}{
		{"no key", testModel, nil, "ANTHROPIC_API_KEY"},
		{"empty model", " ", []Option{WithAPIKey("k")}, "empty model name"},
		{"zero default max tokens", testModel, []Option{WithAPIKey("k"), WithDefaultMaxTokens(0)}, "must be positive"},
		{"nil client", testModel, []Option{WithAPIKey("k"), WithHTTPClient(nil)}, "WithHTTPClient(nil)"},
		{"bad base URL", testModel, []Option{WithAPIKey("k"), WithBaseURL("ftp://host")}, "not an http(s) URL"},
		{"empty header name", testModel, []Option{WithAPIKey("k"), WithHeader("", "v")}, "not a valid header"},
		{"header value with a newline", testModel, []Option{WithAPIKey("k"), WithHeader("X-A", "v\r\nX-B: w")}, "not a valid header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.model, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, %v; want an error containing %q", m, err, c.want)
			}
		})
	}
}

func TestGenerateText(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	resp, err := rec.model(t).Generate(t.Context(), userReq("Capital of France?"))
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Message: llm.Message{ID: "msg_01TextReplyA1", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("Paris is the capital of France.")}},
		// input 21 + cache write 4 + cache read 100
		Usage:        llm.Usage{InputTokens: 125, CachedInputTokens: 100, OutputTokens: 9, Requests: 1},
		FinishReason: llm.FinishStop,
		Model:        testModel,
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
	if got := bodyField(t, rec.only(t).Body, "max_tokens"); got != float64(DefaultMaxTokens) {
		t.Errorf("max_tokens = %v, want the default %d", got, DefaultMaxTokens)
	}
}

func TestGenerateToolUse(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "tool_use", "response.json")))
	resp, err := rec.model(t).Generate(t.Context(), userReq("2+40?"))
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Message: llm.Message{
			ID: "msg_01ToolReplyB2", Role: llm.RoleAssistant,
			Parts:              []llm.Part{llm.Text("Let me add those.")},
			Reasoning:          "The user wants a sum; use the add tool.",
			ReasoningSignature: "sig-part-one",
			ToolCalls: []llm.ToolCall{
				{ID: "toolu_01AddCall", Name: "add", Arguments: `{"a":2,"b":40}`},
				{ID: "toolu_02Lookup", Name: "lookup", Arguments: `{}`},
			},
		},
		Usage:        llm.Usage{InputTokens: 310, OutputTokens: 75, ReasoningTokens: 30, Requests: 1},
		FinishReason: llm.FinishToolCalls,
		Model:        testModel,
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
}

func TestDefaultMaxTokensOption(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	m := rec.model(t, WithDefaultMaxTokens(700))
	if _, err := m.Generate(t.Context(), userReq("a")); err != nil {
		t.Fatal(err)
	}
	req := userReq("b")
	req.MaxTokens = 55
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if got := bodyField(t, reqs[0].Body, "max_tokens"); got != 700.0 {
		t.Errorf("max_tokens with MaxTokens 0 = %v, want 700", got)
	}
	if got := bodyField(t, reqs[1].Body, "max_tokens"); got != 55.0 {
		t.Errorf("max_tokens with MaxTokens 55 = %v, want 55", got)
	}
}

// A max_tokens too large for a non-streaming call makes Generate stream.
func TestGenerateStreamsLargeReplies(t *testing.T) {
	rec := newServer(t, replySSE(fixture(t, "stream_text", "stream.sse")))
	req := userReq("a long essay")
	req.MaxTokens = 64000
	resp, err := rec.model(t).Generate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != "Hello, world" {
		t.Errorf("text = %q, want the streamed text", got)
	}
	if got := bodyField(t, rec.only(t).Body, "stream"); got != true {
		t.Errorf("stream = %v, want true", got)
	}
}

func TestGenerateCancelledContext(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := rec.model(t).Generate(ctx, userReq("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, isAPI := errors.AsType[*llm.APIError](err); isAPI {
		t.Errorf("err = %#v: a cancelled call must return the context error, not an APIError", err)
	}
}
