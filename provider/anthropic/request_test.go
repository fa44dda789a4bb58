package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func ptr[T any](v T) *T { return &v }

// goldenRequest exercises every request mapping; testdata/request/golden.json
// is the body it must produce.
func goldenRequest() *llm.Request {
	measured := llm.Assistant("Measuring.",
		llm.ToolCall{ID: "toolu_A", Name: "add", Arguments: `{"a": 1, "b": 2}`},
		llm.ToolCall{ID: "toolu_B", Name: "lookup", Arguments: `{"query": "shapes"`},
		llm.ToolCall{ID: "toolu_C", Name: "clock", Arguments: ""},
	)
	measured.Reasoning = "I should measure both first."
	measured.ReasoningSignature = "sig-from-an-earlier-reply"
	unsigned := llm.Assistant("Next, compare them.")
	unsigned.Reasoning = "Reasoning without a signature is dropped."
	return &llm.Request{
		Messages: []llm.Message{
			llm.System("You are terse."),
			llm.UserParts(
				llm.Text("What do these two pictures show?"),
				llm.ImageURL("https://example.com/pictures/one.png"),
				llm.ImageURL("data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="),
			),
			measured,
			llm.ToolResult(measured.ToolCalls[0], "3"),
			llm.ToolError(measured.ToolCalls[1], "arguments are not valid JSON: unexpected end of input"),
			llm.ToolResult(measured.ToolCalls[2], ""),
			llm.User("Thanks. What next?"),
			llm.System("A second system note, given mid-conversation."),
			unsigned,
			llm.Assistant("Then report."),
			llm.User("Go on."),
		},
		Tools: []llm.ToolSpec{
			{Name: "add", Description: "Adds two integers.", Parameters: json.RawMessage(`{
				"type": "object",
				"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
				"required": ["a", "b"],
				"additionalProperties": false}`)},
			{Name: "lookup", Description: "Looks a term up.", Parameters: json.RawMessage(`{"properties": {"query": {"type": "string"}}}`)},
			{Name: "clock"},
		},
		ToolChoice:        llm.ToolChoice{Mode: llm.ToolChoiceAuto},
		ParallelToolCalls: ptr(false),
		Temperature:       ptr(0.2),
		TopP:              ptr(0.9),
		MaxTokens:         2000,
		Stop:              []string{"###"},
		Reasoning:         &llm.Reasoning{Enabled: true, BudgetTokens: 3000},
		ResponseFormat: &llm.ResponseFormat{Name: "verdict", Strict: true, Schema: json.RawMessage(`{
			"type": "object",
			"properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
			"required": ["answer", "score"],
			"additionalProperties": false}`)},
	}
}

func TestRequestGolden(t *testing.T) {
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	req := goldenRequest()
	before := req.Clone()
	m := rec.model(t)
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	golden := fixture(t, "request", "golden.json")
	if d := diffJSON(t, rec.only(t).Body, golden); d != "" {
		t.Errorf("request body (-golden +got):\n%s", d)
	}
	if d := cmp.Diff(before, req); d != "" {
		t.Errorf("Generate changed the request (-before +after):\n%s", d)
	}

	// Stream sends the same body, plus "stream": true.
	stream := newServer(t, replySSE(fixture(t, "stream_text", "stream.sse")))
	if _, err := llm.Assemble(stream.model(t).Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(golden, &want); err != nil {
		t.Fatal(err)
	}
	want["stream"] = true
	wantJSON, _ := json.Marshal(want)
	if d := diffJSON(t, stream.only(t).Body, wantJSON); d != "" {
		t.Errorf("streamed request body (-want +got):\n%s", d)
	}
}

// paramsJSON maps req and returns the body fields as generic JSON.
func paramsJSON(t *testing.T, req *llm.Request) map[string]any {
	t.Helper()
	m, err := New(testModel, WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.params(req)
	if err != nil {
		t.Fatalf("params: %v", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, b).(map[string]any)
}

func TestToolChoice(t *testing.T) {
	cases := []struct {
		name     string
		choice   llm.ToolChoice
		parallel *bool
		want     any // nil: no tool_choice field
	}{
		{"unset", llm.ToolChoice{}, nil, nil},
		{"unset, parallel allowed", llm.ToolChoice{}, ptr(true), nil},
		{"unset, no parallel", llm.ToolChoice{}, ptr(false), map[string]any{"type": "auto", "disable_parallel_tool_use": true}},
		{"auto", llm.ToolChoice{Mode: llm.ToolChoiceAuto}, nil, map[string]any{"type": "auto"}},
		{"required", llm.ToolChoice{Mode: llm.ToolChoiceRequired}, nil, map[string]any{"type": "any"}},
		{"required, no parallel", llm.ToolChoice{Mode: llm.ToolChoiceRequired}, ptr(false), map[string]any{"type": "any", "disable_parallel_tool_use": true}},
		{"named", llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "add"}, nil, map[string]any{"type": "tool", "name": "add"}},
		{"none", llm.ToolChoice{Mode: llm.ToolChoiceNone}, ptr(false), map[string]any{"type": "none"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := userReq("hi")
			req.Tools = []llm.ToolSpec{{Name: "add"}}
			req.ToolChoice, req.ParallelToolCalls = c.choice, c.parallel
			got, present := paramsJSON(t, req)["tool_choice"]
			if c.want == nil {
				if present {
					t.Errorf("tool_choice = %v, want none sent", got)
				}
				return
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("tool_choice (-want +got):\n%s", d)
			}
		})
	}
}

func TestThinking(t *testing.T) {
	cases := []struct {
		name       string
		maxTokens  int
		reasoning  *llm.Reasoning
		wantMax    float64
		wantConfig any
	}{
		{"off by default", 0, nil, DefaultMaxTokens, nil},
		{"disabled", 0, &llm.Reasoning{Enabled: false, BudgetTokens: 5000}, DefaultMaxTokens, map[string]any{"type": "disabled"}},
		{"default budget", 0, &llm.Reasoning{Enabled: true}, DefaultMaxTokens, map[string]any{"type": "enabled", "budget_tokens": 1024.0}},
		{"budget raised to the minimum", 0, &llm.Reasoning{Enabled: true, BudgetTokens: 100}, DefaultMaxTokens, map[string]any{"type": "enabled", "budget_tokens": 1024.0}},
		{"max tokens raised above the budget", 1000, &llm.Reasoning{Enabled: true, BudgetTokens: 2048}, 3048, map[string]any{"type": "enabled", "budget_tokens": 2048.0}},
		{"max tokens equal to the budget", 2048, &llm.Reasoning{Enabled: true, BudgetTokens: 2048}, 4096, map[string]any{"type": "enabled", "budget_tokens": 2048.0}},
		{"max tokens already above", 8000, &llm.Reasoning{Enabled: true, BudgetTokens: 2048}, 8000, map[string]any{"type": "enabled", "budget_tokens": 2048.0}},
		{"effort high", 0, &llm.Reasoning{Enabled: true, Effort: "high"}, DefaultMaxTokens + 16384, map[string]any{"type": "enabled", "budget_tokens": 16384.0}},
		{"budget wins over effort", 0, &llm.Reasoning{Enabled: true, BudgetTokens: 2000, Effort: "high"}, DefaultMaxTokens, map[string]any{"type": "enabled", "budget_tokens": 2000.0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := userReq("think")
			req.MaxTokens, req.Reasoning = c.maxTokens, c.reasoning
			req.Temperature, req.TopP = ptr(0.5), ptr(0.5)
			body := paramsJSON(t, req)
			if got := body["max_tokens"]; got != c.wantMax {
				t.Errorf("max_tokens = %v, want %v", got, c.wantMax)
			}
			got, present := body["thinking"]
			if c.wantConfig == nil && present {
				t.Errorf("thinking = %v, want none sent", got)
			}
			if d := cmp.Diff(c.wantConfig, got); c.wantConfig != nil && d != "" {
				t.Errorf("thinking (-want +got):\n%s", d)
			}
			for _, field := range []string{"temperature", "top_p", "top_k"} {
				if v, ok := body[field]; ok {
					t.Errorf("%s = %v sent: API version 2026-10-21 rejects it", field, v)
				}
			}
		})
	}
}

func TestResponseFormatWithoutSchema(t *testing.T) {
	req := &llm.Request{
		Messages:       []llm.Message{llm.System("Be brief."), llm.User("Rate this.")},
		ResponseFormat: &llm.ResponseFormat{},
	}
	body := paramsJSON(t, req)
	want := []any{map[string]any{"type": "text", "text": "Be brief.\n\n" + jsonInstruction}}
	if d := cmp.Diff(want, body["system"]); d != "" {
		t.Errorf("system (-want +got):\n%s", d)
	}
	if v, ok := body["output_config"]; ok {
		t.Errorf("output_config = %v, want none without a schema", v)
	}
}

// A user message between the calls and their results still gets the
// results first, as the API requires.
func TestToolResultsComeFirst(t *testing.T) {
	call := llm.ToolCall{ID: "toolu_X", Name: "clock", Arguments: "{}"}
	req := &llm.Request{Messages: []llm.Message{
		llm.User("What time is it?"),
		llm.Assistant("", call),
		llm.User("(also, hurry)"),
		llm.ToolResult(call, "noon"),
	}}
	msgs := paramsJSON(t, req)["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3 (user, assistant, merged user)", len(msgs))
	}
	last := msgs[2].(map[string]any)["content"].([]any)
	var types []string
	for _, b := range last {
		types = append(types, b.(map[string]any)["type"].(string))
	}
	if d := cmp.Diff([]string{"tool_result", "text"}, types); d != "" {
		t.Errorf("last user message block types (-want +got):\n%s", d)
	}
}

func TestRequestErrors(t *testing.T) {
	call := llm.ToolCall{ID: "toolu_1", Name: "add", Arguments: "{}"}
	withMsgs := func(msgs ...llm.Message) *llm.Request { return &llm.Request{Messages: msgs} }
	mod := func(f func(*llm.Request)) *llm.Request { r := userReq("hi"); f(r); return r }
	cases := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"no messages", &llm.Request{}, "no messages"},
		{"only system", withMsgs(llm.System("x")), "add a user message"},
		{"negative max tokens", mod(func(r *llm.Request) { r.MaxTokens = -1 }), "negative"},
		{"unknown role", withMsgs(llm.Message{Role: "narrator", Parts: []llm.Part{llm.Text("x")}}), `role "narrator"`},
		{"image in system", withMsgs(llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{llm.ImageURL("https://e.com/a.png")}}, llm.User("x")), "only text"},
		{"unknown part", withMsgs(llm.UserParts(llm.Part{Type: "audio"})), `"audio"`},
		{"bad image URL", withMsgs(llm.UserParts(llm.ImageURL("file:///etc/x.png"))), "neither an http(s) URL"},
		{"unsupported image type", withMsgs(llm.UserParts(llm.ImageURL("data:image/bmp;base64,AAAA"))), "image/bmp"},
		{"data URL not base64", withMsgs(llm.UserParts(llm.ImageURL("data:image/png,raw"))), "data:<media type>;base64"},
		{"call without ID", withMsgs(llm.User("x"), llm.Assistant("", llm.ToolCall{Name: "add"})), "without an ID"},
		{"tool result without call ID", withMsgs(llm.User("x"), llm.Assistant("", call), llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.Text("3")}}), "no ToolCallID"},
		{"tool without name", mod(func(r *llm.Request) { r.Tools = []llm.ToolSpec{{}} }), "has no name"},
		{"tool schema not object", mod(func(r *llm.Request) {
			r.Tools = []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"string"}`)}}
		}), "only object schemas"},
		{"tool schema not JSON", mod(func(r *llm.Request) { r.Tools = []llm.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}} }), "not a JSON object"},
		{"named choice without name", mod(func(r *llm.Request) { r.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceTool} }), "needs the tool's Name"},
		{"unknown choice", mod(func(r *llm.Request) { r.ToolChoice = llm.ToolChoice{Mode: "sometimes"} }), `"sometimes"`},
		{"bad effort", mod(func(r *llm.Request) { r.Reasoning = &llm.Reasoning{Enabled: true, Effort: "extreme"} }), `"extreme"`},
		{"negative budget", mod(func(r *llm.Request) { r.Reasoning = &llm.Reasoning{Enabled: true, BudgetTokens: -5} }), "negative"},
		{"schema not an object", mod(func(r *llm.Request) { r.ResponseFormat = &llm.ResponseFormat{Schema: json.RawMessage(`"x"`)} }), "ResponseFormat.Schema"},
	}
	rec := newServer(t, replyJSON(200, fixture(t, "text", "response.json")))
	m := rec.model(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.Generate(t.Context(), c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Generate error = %v, want one containing %q", err, c.want)
			}
			if _, isAPI := errors.AsType[*llm.APIError](err); isAPI || llm.IsRetryable(err) {
				t.Errorf("error %v is an APIError or retryable: a bad request must not be retried", err)
			}
		})
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("server got %d requests for invalid requests, want 0", n)
	}
}

func TestToolInput(t *testing.T) {
	cases := map[string]string{
		`{"a": 1}`:   `{"a": 1}`,
		"  ":         `{}`,
		`{"a": 1`:    `{"invalid_json":"{\"a\": 1"}`,
		`[1, 2]`:     `{"invalid_json":"[1, 2]"}`,
		`"text"`:     `{"invalid_json":"\"text\""}`,
		`{} trail`:   `{"invalid_json":"{} trail"}`,
		" {\"b\":2}": `{"b":2}`,
	}
	for in, want := range cases {
		if got := string(toolInput(in)); got != want {
			t.Errorf("toolInput(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFinishReason(t *testing.T) {
	cases := map[string]llm.FinishReason{
		"":                              "",
		"end_turn":                      llm.FinishStop,
		"stop_sequence":                 llm.FinishStop,
		"pause_turn":                    llm.FinishStop,
		"tool_use":                      llm.FinishToolCalls,
		"max_tokens":                    llm.FinishLength,
		"model_context_window_exceeded": llm.FinishLength,
		"refusal":                       llm.FinishFiltered,
	}
	for in, want := range cases {
		if got := finishReason(sdk.StopReason(in)); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", in, got, want)
		}
	}
}
