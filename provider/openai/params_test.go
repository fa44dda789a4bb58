package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

// body maps req with m and returns the JSON the SDK would send.
func body(t *testing.T, m *Model, req *llm.Request) []byte {
	t.Helper()
	p, err := m.params(req)
	if err != nil {
		t.Fatalf("params: %v", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func mustNew(t *testing.T, opts ...Option) *Model {
	t.Helper()
	m, err := New("m", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTokenLimitField(t *testing.T) {
	official := []Option{WithAPIKey("k"), WithBaseURL(DefaultBaseURL)}
	local := []Option{WithBaseURL("http://localhost:11434/v1")}
	cases := []struct {
		name string
		opts []Option
		want string
	}{
		{"official default", official, "max_completion_tokens"},
		{"official host, other path", []Option{WithAPIKey("k"), WithBaseURL("https://API.openai.com:443/v1/")}, "max_completion_tokens"},
		{"compatible default", local, "max_tokens"},
		{"official forced legacy", append(official, WithTokenLimitField(TokenLimitMaxTokens)), "max_tokens"},
		{"compatible forced new", append(local, WithTokenLimitField(TokenLimitMaxCompletionTokens)), "max_completion_tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := body(t, mustNew(t, c.opts...), &llm.Request{Messages: []llm.Message{llm.User("x")}, MaxTokens: 300})
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[c.want]
			if v, ok := bodyField(t, b, c.want); !ok || v != json.Number("300") {
				t.Errorf("%s = %v in %s", c.want, v, b)
			}
			if _, ok := bodyField(t, b, other); ok {
				t.Errorf("%s also sent: %s", other, b)
			}
		})
	}
}

func TestRequestMappingVariants(t *testing.T) {
	m := mustNew(t, WithBaseURL("http://localhost/v1"))
	tools := []llm.ToolSpec{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}}
	yes := true
	user := []llm.Message{llm.User("x")}
	cases := []struct {
		name   string
		req    *llm.Request
		fields map[string]any // expected top-level fields; nil value: absent
	}{
		{"tool choice auto", &llm.Request{Messages: user, Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAuto}, ParallelToolCalls: &yes},
			map[string]any{"tool_choice": "auto", "parallel_tool_calls": true}},
		{"tool choice none", &llm.Request{Messages: user, Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
			map[string]any{"tool_choice": "none", "parallel_tool_calls": nil}},
		{"tool choice required", &llm.Request{Messages: user, Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
			map[string]any{"tool_choice": "required"}},
		{"no tools drops choice and parallel", &llm.Request{Messages: user, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAuto}, ParallelToolCalls: &yes},
			map[string]any{"tool_choice": nil, "parallel_tool_calls": nil, "tools": nil}},
		{"json object", &llm.Request{Messages: user, ResponseFormat: &llm.ResponseFormat{}},
			map[string]any{"response_format": map[string]any{"type": "json_object"}}},
		{"schema with default name, not strict", &llm.Request{Messages: user, ResponseFormat: &llm.ResponseFormat{Schema: json.RawMessage(`{"type":"object"}`)}},
			map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": map[string]any{"type": "object"}}}}},
		{"single stop", &llm.Request{Messages: user, Stop: []string{"###"}},
			map[string]any{"stop": []any{"###"}}},
		{"nothing optional", &llm.Request{Messages: user},
			map[string]any{"temperature": nil, "top_p": nil, "max_tokens": nil, "stop": nil, "response_format": nil, "reasoning_effort": nil}},
		{"text parts join into a string", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.Text("a"), llm.Text("b"))}},
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "ab"}}}},
		{"assistant with calls only has no content", &llm.Request{Messages: []llm.Message{user[0], llm.Assistant("", llm.ToolCall{ID: "c1", Name: "lookup", Arguments: "{}"})}},
			map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": "x"},
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "lookup", "arguments": "{}"}}}},
			}}},
		{"empty assistant sends empty content", &llm.Request{Messages: []llm.Message{user[0], llm.Assistant("")}},
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "assistant", "content": ""}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := body(t, m, c.req)
			for k, want := range c.fields {
				got, ok := bodyField(t, b, k)
				if want == nil {
					if ok {
						t.Errorf("%s sent as %v", k, got)
					}
					continue
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s (-want +got):\n%s", k, d)
				}
			}
		})
	}
}

func TestReasoningEffort(t *testing.T) {
	m := mustNew(t, WithBaseURL("http://localhost/v1"))
	cases := []struct {
		r    *llm.Reasoning
		want any // nil: not sent
	}{
		{nil, nil},
		{&llm.Reasoning{Enabled: false, Effort: "high", BudgetTokens: 50000}, nil},
		{&llm.Reasoning{Enabled: true}, nil},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 1}, "low"},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 2048}, "low"},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 2049}, "medium"},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 8192}, "medium"},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 8193}, "high"},
		{&llm.Reasoning{Enabled: true, BudgetTokens: 100, Effort: "High"}, "high"},
		{&llm.Reasoning{Enabled: true, Effort: "minimal"}, "minimal"},
	}
	for _, c := range cases {
		got, ok := bodyField(t, body(t, m, &llm.Request{Messages: []llm.Message{llm.User("x")}, Reasoning: c.r}), "reasoning_effort")
		if (c.want == nil && ok) || (c.want != nil && got != c.want) {
			t.Errorf("%+v: reasoning_effort = %v (sent %v), want %v", c.r, got, ok, c.want)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	user := llm.User("x")
	img := llm.ImageURL("https://example.com/a.png")
	call := llm.ToolCall{ID: "c1", Name: "lookup"}
	tools := []llm.ToolSpec{{Name: "lookup"}}
	cases := []struct {
		name    string
		req     *llm.Request
		wantErr string
	}{
		{"nil request", nil, "nil"},
		{"no messages", &llm.Request{}, "no messages"},
		{"tool result without call ID", &llm.Request{Messages: []llm.Message{user, {ID: "t", Role: llm.RoleTool, Parts: []llm.Part{llm.Text("r")}}}}, "ToolCallID"},
		{"image in system", &llm.Request{Messages: []llm.Message{{ID: "s", Role: llm.RoleSystem, Parts: []llm.Part{img}}, user}}, "no image in a system message"},
		{"image in tool result", &llm.Request{Messages: []llm.Message{user, {ID: "t", Role: llm.RoleTool, ToolCallID: "c1", Parts: []llm.Part{img}}}}, "no image in a tool result"},
		{"image without URL", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.Text("see"), llm.Part{Type: llm.PartImage})}}, "no URL"},
		{"unknown part", &llm.Request{Messages: []llm.Message{llm.UserParts(llm.Part{Type: "audio"})}}, `unknown part type "audio"`},
		{"unknown role", &llm.Request{Messages: []llm.Message{{ID: "d", Role: "developer"}}}, `unknown role "developer"`},
		{"assistant call without ID", &llm.Request{Messages: []llm.Message{user, llm.Assistant("", llm.ToolCall{Name: "lookup"})}}, "no ID or no name"},
		{"tool without name", &llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolSpec{{Description: "d"}}}, "tool 0 has no name"},
		{"schema not an object", &llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolSpec{{Name: "lookup", Parameters: json.RawMessage(`["type"]`)}}}, "JSON object schema"},
		{"schema not JSON", &llm.Request{Messages: []llm.Message{user}, Tools: []llm.ToolSpec{{Name: "lookup", Parameters: json.RawMessage(`{type}`)}}}, "JSON object schema"},
		{"response schema not an object", &llm.Request{Messages: []llm.Message{user}, ResponseFormat: &llm.ResponseFormat{Schema: json.RawMessage(`"string"`)}}, "ResponseFormat.Schema"},
		{"named choice without name", &llm.Request{Messages: []llm.Message{user}, Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}}, "set ToolChoice.Name"},
		{"named choice not offered", &llm.Request{Messages: []llm.Message{user}, Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "other"}}, `"other", which is not among`},
		{"required without tools", &llm.Request{Messages: []llm.Message{user}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}}, "no tools"},
		{"unknown choice", &llm.Request{Messages: []llm.Message{user}, Tools: tools, ToolChoice: llm.ToolChoice{Mode: "any"}}, `unknown ToolChoice mode "any"`},
		{"negative max tokens", &llm.Request{Messages: []llm.Message{user}, MaxTokens: -1}, "MaxTokens is -1"},
		{"valid history still checked", &llm.Request{Messages: []llm.Message{user, llm.Assistant("", call), {ID: "t", Role: llm.RoleTool, Parts: []llm.Part{llm.Text("r")}}}}, "message 2 (tool)"},
	}
	for _, c := range cases {
		for mode, run := range callModes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
				err := run(newModel(t, s), context.Background(), c.req)
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				if _, ok := errors.AsType[*llm.APIError](err); ok || llm.IsRetryable(err) {
					t.Errorf("a bad request came back as a retryable APIError: %v", err)
				}
				if s.count() != 0 {
					t.Errorf("%d requests sent for a bad request", s.count())
				}
			})
		}
	}
}

func TestStreamYieldsOnlyTheErrorForBadRequests(t *testing.T) {
	s := newServer(t, serveJSON(200, nil, nil))
	n := 0
	for c, err := range newModel(t, s).Stream(context.Background(), &llm.Request{}) {
		n++
		if err == nil || !cmp.Equal(c, llm.Chunk{}) {
			t.Errorf("yielded %+v, %v; want only an error", c, err)
		}
	}
	if n != 1 {
		t.Errorf("%d yields, want 1", n)
	}
}
