package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func collect(t *testing.T, seq func(func(llm.Chunk, error) bool)) ([]llm.Chunk, error) {
	t.Helper()
	var out []llm.Chunk
	for c, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func TestStreamTextChunks(t *testing.T) {
	rec := newServer(t, replySSE(fixture(t, "stream_text", "stream.sse")))
	req := userReq("Say hello")
	req.Stop = []string{"###"}
	chunks, err := collect(t, rec.model(t).Stream(t.Context(), req))
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Chunk{
		{Model: testModel, Usage: &llm.Usage{InputTokens: 25, OutputTokens: 1, Requests: 1}},
		{Text: "Hello"},
		{Text: ", world"},
		{FinishReason: llm.FinishStop, Usage: &llm.Usage{InputTokens: 25, OutputTokens: 6, Requests: 1}},
	}
	if d := cmp.Diff(want, chunks); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
	body := rec.only(t).Body
	if got := bodyField(t, body, "stream"); got != true {
		t.Errorf("stream = %v, want true", got)
	}
}

func TestStreamThinking(t *testing.T) {
	rec := newServer(t, replySSE(fixture(t, "stream_thinking", "stream.sse")))
	req := userReq("2+2?")
	req.Reasoning = &llm.Reasoning{Enabled: true}
	resp, err := llm.Assemble(rec.model(t).Stream(t.Context(), req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Message.ID = ""
	want := &llm.Response{
		Message: llm.Message{
			Role:               llm.RoleAssistant,
			Parts:              []llm.Part{llm.Text("The answer is 4.")},
			Reasoning:          "Two plus two is four.",
			ReasoningSignature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk",
		},
		Usage:        llm.Usage{InputTokens: 52, CachedInputTokens: 12, OutputTokens: 58, ReasoningTokens: 44, Requests: 1},
		FinishReason: llm.FinishStop,
		Model:        testModel,
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("assembled (-want +got):\n%s", d)
	}
}

func TestStreamToolCalls(t *testing.T) {
	rec := newServer(t, replySSE(fixture(t, "stream_tools", "stream.sse")))
	m := rec.model(t)
	chunks, err := collect(t, m.Stream(t.Context(), userReq("add and look up")))
	if err != nil {
		t.Fatal(err)
	}
	// The tool fragments carry the content block's index; the empty
	// partial_json fragment is not a chunk.
	var deltas []llm.ToolCallDelta
	for _, c := range chunks {
		deltas = append(deltas, c.ToolCalls...)
	}
	wantDeltas := []llm.ToolCallDelta{
		{Index: 1, ID: "toolu_01First", Name: "add"},
		{Index: 1, Arguments: `{"a": 1`},
		{Index: 1, Arguments: `, "b": 2}`},
		{Index: 2, ID: "toolu_02Second", Name: "lookup"},
		{Index: 2, Arguments: `{"query":`},
		{Index: 2, Arguments: ` "graph theory"}`},
	}
	if d := cmp.Diff(wantDeltas, deltas); d != "" {
		t.Errorf("tool-call deltas (-want +got):\n%s", d)
	}

	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	resp := a.Response()
	resp.Message.ID = ""
	want := &llm.Response{
		Message: llm.Message{
			Role:  llm.RoleAssistant,
			Parts: []llm.Part{llm.Text("Checking both.")},
			ToolCalls: []llm.ToolCall{
				{ID: "toolu_01First", Name: "add", Arguments: `{"a": 1, "b": 2}`},
				{ID: "toolu_02Second", Name: "lookup", Arguments: `{"query": "graph theory"}`},
			},
		},
		Usage:        llm.Usage{InputTokens: 472, OutputTokens: 89, Requests: 1},
		FinishReason: llm.FinishToolCalls,
		Model:        testModel,
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("assembled (-want +got):\n%s", d)
	}
}

func TestStreamOverloadedEvent(t *testing.T) {
	rec := newServer(t, replySSE(fixture(t, "stream_overloaded", "stream.sse")))
	chunks, err := collect(t, rec.model(t).Stream(t.Context(), userReq("hi")))
	if len(chunks) != 2 || chunks[1].Text != "Partial" {
		t.Errorf("chunks before the error = %+v, want message_start and the text %q", chunks, "Partial")
	}
	ae, ok := errors.AsType[*llm.APIError](err)
	if !ok {
		t.Fatalf("err = %v (%T), want *llm.APIError", err, err)
	}
	want := llm.APIError{Provider: "anthropic", Model: testModel, StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}
	if d := cmp.Diff(want, *ae, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Err" }, cmp.Ignore())); d != "" {
		t.Errorf("APIError (-want +got):\n%s", d)
	}
	if !ae.Retryable() {
		t.Error("an overloaded error must be retryable")
	}
	rec.only(t)
}

// A stream cut before message_stop is an incomplete reply: a retryable
// error, never a silent success.
func TestStreamTruncated(t *testing.T) {
	full := string(fixture(t, "stream_text", "stream.sse"))
	cut := full[:len(full)/2]
	cut = cut[:strings.LastIndex(cut, "\n\n")+2]
	rec := newServer(t, replySSE([]byte(cut)))
	_, err := collect(t, rec.model(t).Stream(t.Context(), userReq("hi")))
	ae, ok := errors.AsType[*llm.APIError](err)
	if !ok || !errors.Is(err, io.ErrUnexpectedEOF) || !ae.Retryable() {
		t.Fatalf("err = %v, want a retryable APIError wrapping io.ErrUnexpectedEOF", err)
	}
}

// holdServer sends the start of a stream, then holds it open until the
// client goes away; gone is closed when the handler sees the disconnect.
func holdServer(t *testing.T) (rec *recorder, gone chan struct{}) {
	gone = make(chan struct{})
	head := `event: message_start
data: {"type":"message_start","message":{"id":"msg_hold","type":"message","role":"assistant","content":[],"model":"claude-test-1","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"first"}}

`
	rec = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, head)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second): // a safety net: the test fails well before
		}
	})
	return rec, gone
}

func waitGone(t *testing.T, gone chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(3 * time.Second):
		t.Fatal("the server still holds the connection: the response body was not closed")
	}
}

func TestStreamCancelMidStream(t *testing.T) {
	rec, gone := holdServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var texts []string
	var lastErr error
	start := time.Now()
	for c, err := range rec.model(t).Stream(ctx, userReq("hi")) {
		if err != nil {
			lastErr = err
			break
		}
		if c.Text != "" {
			texts = append(texts, c.Text)
			cancel()
		}
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("iteration took %v after cancel, want prompt", elapsed)
	}
	if !errors.Is(lastErr, context.Canceled) {
		t.Errorf("final error = %v, want context.Canceled", lastErr)
	}
	if _, isAPI := errors.AsType[*llm.APIError](lastErr); isAPI {
		t.Errorf("final error = %#v: cancellation must pass through as the context error", lastErr)
	}
	if len(texts) != 1 || texts[0] != "first" {
		t.Errorf("texts = %q, want [first]", texts)
	}
	waitGone(t, gone)
}

func TestStreamBreakClosesBody(t *testing.T) {
	rec, gone := holdServer(t)
	for c, err := range rec.model(t).Stream(t.Context(), userReq("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Text != "" {
			break
		}
	}
	waitGone(t, gone)
}

func TestStreamNetworkError(t *testing.T) {
	rec := newServer(t, replySSE(nil))
	m := rec.model(t)
	rec.srv.Close() // nothing listens any more
	_, err := collect(t, m.Stream(t.Context(), userReq("hi")))
	ae, ok := errors.AsType[*llm.APIError](err)
	if !ok || ae.StatusCode != 0 || ae.Err == nil || !ae.Retryable() {
		t.Fatalf("err = %#v, want a retryable APIError with status 0 and the network error", err)
	}
	if ae.Provider != "anthropic" || ae.Model != testModel {
		t.Errorf("APIError names %s/%s, want anthropic/%s", ae.Provider, ae.Model, testModel)
	}
}

func TestStreamBadRequestNoHTTP(t *testing.T) {
	rec := newServer(t, replySSE(nil))
	_, err := collect(t, rec.model(t).Stream(t.Context(), &llm.Request{}))
	if err == nil {
		t.Fatal("a request without messages must fail")
	}
	if n := len(rec.requests()); n != 0 {
		t.Errorf("server got %d requests for an invalid request, want 0", n)
	}
}
