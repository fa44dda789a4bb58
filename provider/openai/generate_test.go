package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func TestGenerateText(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
	m := newModel(t, s, WithHeader("X-Fixture-Team", "agents"), WithHeader("OpenAI-Project", "proj_fixture"))
	resp, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("What is two plus three?")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.Text(); got != "Two plus three is five." {
		t.Errorf("text = %q", got)
	}
	if resp.Message.Role != llm.RoleAssistant || !strings.HasPrefix(resp.Message.ID, "msg_") {
		t.Errorf("message role %q id %q, want an assistant message with a msg_ ID", resp.Message.Role, resp.Message.ID)
	}
	if resp.FinishReason != llm.FinishStop || resp.Model != "gpt-4o-mini-2024-07-18" {
		t.Errorf("finish %q model %q", resp.FinishReason, resp.Model)
	}
	if want := (llm.Usage{InputTokens: 19, OutputTokens: 7, Requests: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Message.Reasoning != "" || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("unexpected reasoning %q or calls %v", resp.Message.Reasoning, resp.Message.ToolCalls)
	}

	r := s.last(t)
	if r.method != "POST" || r.path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.method, r.path)
	}
	for k, want := range map[string]string{
		"Authorization":  "Bearer sk-fixture",
		"X-Fixture-Team": "agents",
		"Openai-Project": "proj_fixture",
		"Content-Type":   "application/json",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	want := `{"model":"gpt-4o-fixture","messages":[{"role":"user","content":"What is two plus three?"}]}`
	if d := jsonDiff(t, []byte(want), r.body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	if s.count() != 1 {
		t.Errorf("%d requests, want 1", s.count())
	}
}

func TestGenerateToolCalls(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "tool_calls/response.json"), nil))
	resp, err := newModel(t, s).Generate(context.Background(), &llm.Request{
		Messages: []llm.Message{llm.User("Weather and time, please.")},
		Tools:    []llm.ToolSpec{{Name: "get_weather"}, {Name: "get_time"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_fixture_alpha", Name: "get_weather", Arguments: `{"city":"Springfield","unit":"celsius"}`},
		{ID: "call_fixture_beta", Name: "get_time", Arguments: `{"zone":"UTC"}`},
	}
	if d := cmp.Diff(want, resp.Message.ToolCalls); d != "" {
		t.Errorf("tool calls (-want +got):\n%s", d)
	}
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	if len(resp.Message.Parts) != 0 {
		t.Errorf("null content became parts %v", resp.Message.Parts)
	}
	if want := (llm.Usage{InputTokens: 82, CachedInputTokens: 64, OutputTokens: 43, Requests: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestGenerateReasoningContent(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "reasoning/response.json"), nil))
	resp, err := newModel(t, s).Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("9.11 or 9.8?")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.Reasoning, "Compare the tenths first: 8 is more than 1, so 9.8 is larger."; got != want {
		t.Errorf("reasoning = %q, want %q", got, want)
	}
	if got := resp.Message.Text(); got != "9.8 is greater than 9.11." {
		t.Errorf("text = %q", got)
	}
	// DeepSeek reports cache hits as prompt_cache_hit_tokens.
	if want := (llm.Usage{InputTokens: 18, CachedInputTokens: 16, OutputTokens: 96, ReasoningTokens: 81, Requests: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestGenerateOddReplies(t *testing.T) {
	cases := []struct {
		name, body string
		check      func(t *testing.T, r *llm.Response)
	}{
		{"reasoning field and stop after calls",
			`{"id":"x","object":"chat.completion","model":"local","choices":[{"index":0,"finish_reason":"stop",
			  "message":{"role":"assistant","content":"","reasoning":"thinking aloud",
			  "tool_calls":[{"type":"function","function":{"name":"lookup","arguments":""}}]}}]}`,
			func(t *testing.T, r *llm.Response) {
				if r.Message.Reasoning != "thinking aloud" {
					t.Errorf("reasoning = %q", r.Message.Reasoning)
				}
				if r.FinishReason != llm.FinishToolCalls {
					t.Errorf("finish = %q, want tool_calls for a reply holding calls", r.FinishReason)
				}
				if len(r.Message.ToolCalls) != 1 || !strings.HasPrefix(r.Message.ToolCalls[0].ID, "call_") || r.Message.ToolCalls[0].Arguments != "{}" {
					t.Errorf("calls = %+v, want one with a fresh ID and {} arguments", r.Message.ToolCalls)
				}
				if r.Usage != (llm.Usage{Requests: 1}) {
					t.Errorf("usage = %+v, want only the request counted", r.Usage)
				}
			}},
		{"refusal",
			`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop",
			  "message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`,
			func(t *testing.T, r *llm.Response) {
				if r.Message.Text() != "I can't help with that." {
					t.Errorf("text = %q, want the refusal", r.Message.Text())
				}
			}},
		{"length",
			`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"cut"}}]}`,
			func(t *testing.T, r *llm.Response) {
				if r.FinishReason != llm.FinishLength {
					t.Errorf("finish = %q", r.FinishReason)
				}
			}},
		{"content filter and non-string reasoning",
			`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"content_filter",
			  "message":{"role":"assistant","content":"","reasoning":{"summary":"object"}}}]}`,
			func(t *testing.T, r *llm.Response) {
				if r.FinishReason != llm.FinishFiltered || r.Message.Reasoning != "" {
					t.Errorf("finish %q reasoning %q", r.FinishReason, r.Message.Reasoning)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, serveJSON(200, []byte(c.body), nil))
			resp, err := newModel(t, s).Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, resp)
		})
	}
}

// everyOption is a request using every field the mapping knows.
func everyOption() *llm.Request {
	parallel := false
	temp, topP := 0.25, 0.9
	alpha := llm.ToolCall{ID: "call_fixture_alpha", Name: "get_weather", Arguments: `{"city":"Springfield"}`}
	beta := llm.ToolCall{ID: "call_fixture_beta", Name: "get_time"}
	assistant := llm.Assistant("Let me look that up.", alpha, beta)
	assistant.Reasoning = "private reasoning that must not be sent"
	return &llm.Request{
		Messages: []llm.Message{
			llm.System("You are a careful assistant."),
			llm.UserParts(llm.Text("What is in this picture?"),
				llm.Part{Type: llm.PartImage, URL: "https://example.com/fixture.png", Detail: "low"}),
			assistant,
			llm.ToolResult(alpha, "sunny, 21 C"),
			llm.ToolError(beta, "zone missing"),
			llm.User("Summarise as JSON."),
		},
		Tools: []llm.ToolSpec{
			{
				Name:        "get_weather",
				Description: "Current weather for a city.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},
					"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","maximum":9007199254740993}},
					"required":["city"],"additionalProperties":false}`),
			},
			{Name: "get_time"},
		},
		ToolChoice:        llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
		ParallelToolCalls: &parallel,
		Temperature:       &temp,
		TopP:              &topP,
		MaxTokens:         512,
		Stop:              []string{"END", "STOP"},
		ResponseFormat: &llm.ResponseFormat{
			Name:   "summary",
			Schema: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false}`),
			Strict: true,
		},
		Reasoning: &llm.Reasoning{Enabled: true, BudgetTokens: 4096},
	}
}

func TestRequestEveryOption(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
	m := newModel(t, s, WithExtraBody("top_k", 40))
	req := everyOption()
	before := req.Clone()
	before.Messages = nil
	for _, msg := range req.Messages {
		before.Messages = append(before.Messages, msg.Clone())
	}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if d := jsonDiff(t, fixture(t, "request_all_options/request.json"), s.last(t).body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, req); d != "" {
		t.Errorf("Generate modified the request (-before +after):\n%s", d)
	}

	// The streamed request is the same plus the stream fields.
	ss := newServer(t, serveSSE(fixture(t, "stream_text/stream.sse")))
	collect(t, newModel(t, ss, WithExtraBody("top_k", 40)).Stream(context.Background(), req))
	want := decodeJSON(t, fixture(t, "request_all_options/request.json")).(map[string]any)
	want["stream"] = true
	want["stream_options"] = map[string]any{"include_usage": true}
	if d := cmp.Diff(want, decodeJSON(t, ss.last(t).body)); d != "" {
		t.Errorf("streamed request body (-want +got):\n%s", d)
	}
}

func TestNewConfiguration(t *testing.T) {
	t.Run("no key for the official API", func(t *testing.T) {
		t.Setenv(EnvAPIKey, "")
		t.Setenv(EnvBaseURL, "")
		_, err := New("gpt-4o-mini")
		if err == nil || !strings.Contains(err.Error(), EnvAPIKey) || !strings.Contains(err.Error(), "WithAPIKey") {
			t.Fatalf("err = %v, want one telling to set %s or WithAPIKey", err, EnvAPIKey)
		}
	})
	t.Run("env key and base URL", func(t *testing.T) {
		s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
		t.Setenv(EnvAPIKey, "sk-from-env")
		t.Setenv(EnvBaseURL, s.URL+"/env/v1")
		m, err := New("local-model", WithHTTPClient(s.Client()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		r := s.last(t)
		if r.path != "/env/v1/chat/completions" || r.header.Get("Authorization") != "Bearer sk-from-env" {
			t.Errorf("request to %s with Authorization %q", r.path, r.header.Get("Authorization"))
		}
		if m.Name() != "openai:local-model" {
			t.Errorf("Name = %q", m.Name())
		}
	})
	t.Run("options win over env", func(t *testing.T) {
		s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
		t.Setenv(EnvAPIKey, "sk-from-env")
		t.Setenv(EnvBaseURL, "http://127.0.0.1:1/unused")
		m := newModel(t, s, WithAPIKey("sk-option"))
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		if got := s.last(t).header.Get("Authorization"); got != "Bearer sk-option" {
			t.Errorf("Authorization = %q", got)
		}
	})
	t.Run("custom base URL without key", func(t *testing.T) {
		s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
		t.Setenv(EnvAPIKey, "")
		m, err := New("local-model", WithBaseURL(s.URL+"/v1"), WithHTTPClient(s.Client()), WithProviderName("openai-compatible"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(context.Background(), &llm.Request{Messages: []llm.Message{llm.User("hi")}}); err != nil {
			t.Fatal(err)
		}
		if got := s.last(t).header.Values("Authorization"); len(got) != 0 {
			t.Errorf("Authorization sent without a key: %q", got)
		}
		if m.Name() != "openai-compatible:local-model" {
			t.Errorf("Name = %q", m.Name())
		}
	})
	for _, c := range []struct {
		name, model string
		opts        []Option
		wantErr     string
	}{
		{"empty model", " ", nil, "model name is empty"},
		{"bad base URL", "m", []Option{WithBaseURL("localhost:8000/v1")}, "not an http(s) URL"},
		{"empty provider", "m", []Option{WithBaseURL("http://localhost/v1"), WithProviderName("")}, "empty name"},
		{"bad token field", "m", []Option{WithBaseURL("http://localhost/v1"), WithTokenLimitField(7)}, "TokenLimitField"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.model, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}
