package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/trellis-agents/trellis/llm"
)

func hello() *llm.Request { return &llm.Request{Messages: []llm.Message{llm.User("hello")}} }

func TestStreamText(t *testing.T) {
	stream := fixture(t, "stream_text/stream.sse")
	s := newServer(t, serveSSE(stream))
	chunks := collect(t, newModel(t, s).Stream(context.Background(), hello()))

	if len(chunks) != dataEvents(stream) {
		t.Fatalf("%d chunks for %d events; want one chunk per event", len(chunks), dataEvents(stream))
	}
	var texts []string
	for _, c := range chunks {
		texts = append(texts, c.Text)
		if c.Model != "gpt-4o-mini-2024-07-18" {
			t.Errorf("chunk model = %q", c.Model)
		}
	}
	if d := cmp.Diff([]string{"", "Two", " plus three", " is five.", "", ""}, texts); d != "" {
		t.Errorf("text deltas (-want +got):\n%s", d)
	}
	if chunks[4].FinishReason != llm.FinishStop || chunks[4].Usage != nil {
		t.Errorf("finish chunk = %+v, want stop without usage", chunks[4])
	}
	// The usage chunk: empty choices, usage only.
	last := chunks[5]
	want := llm.Usage{InputTokens: 1180, CachedInputTokens: 1024, OutputTokens: 7, Requests: 1}
	if last.Usage == nil || *last.Usage != want || last.FinishReason != "" || last.Text != "" {
		t.Errorf("usage chunk = %+v (usage %+v), want usage %+v only", last, last.Usage, want)
	}
	for _, c := range chunks[:5] {
		if c.Usage != nil {
			t.Errorf("chunk %+v carries usage; only the last should", c)
		}
	}

	resp, err := llm.Assemble(newModel(t, s).Stream(context.Background(), hello()))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "Two plus three is five." || resp.FinishReason != llm.FinishStop || resp.Usage != want {
		t.Errorf("assembled %q finish %q usage %+v", resp.Message.Text(), resp.FinishReason, resp.Usage)
	}
	if s.count() != 2 {
		t.Errorf("%d requests for two streams", s.count())
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	s := newServer(t, serveSSE(fixture(t, "stream_parallel_tools/stream.sse")))
	chunks := collect(t, newModel(t, s).Stream(context.Background(), hello()))

	// Fragments pass through untouched, in arrival order.
	var deltas []llm.ToolCallDelta
	for _, c := range chunks {
		deltas = append(deltas, c.ToolCalls...)
	}
	wantDeltas := []llm.ToolCallDelta{
		{Index: 0, ID: "call_fixture_alpha", Name: "get_weather"},
		{Index: 1, ID: "call_fixture_beta", Name: "get_time"},
		{Index: 0, Arguments: `{"ci`},
		{Index: 1, Arguments: `{"zone":`},
		{Index: 0, Arguments: `ty": "Spring`},
		{Index: 1, Arguments: ` "UTC"}`},
		{Index: 0, Arguments: `field"}`},
	}
	if d := cmp.Diff(wantDeltas, deltas); d != "" {
		t.Errorf("tool-call deltas (-want +got):\n%s", d)
	}

	var a llm.Assembler
	for _, c := range chunks {
		a.Add(c)
	}
	resp := a.Response()
	wantCalls := []llm.ToolCall{
		{ID: "call_fixture_alpha", Name: "get_weather", Arguments: `{"city": "Springfield"}`},
		{ID: "call_fixture_beta", Name: "get_time", Arguments: `{"zone": "UTC"}`},
	}
	if d := cmp.Diff(wantCalls, resp.Message.ToolCalls); d != "" {
		t.Errorf("assembled calls (-want +got):\n%s", d)
	}
	if resp.FinishReason != llm.FinishToolCalls || resp.Message.Text() != "" {
		t.Errorf("finish %q text %q", resp.FinishReason, resp.Message.Text())
	}
	if want := (llm.Usage{InputTokens: 82, OutputTokens: 43, Requests: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestStreamReasoningContent(t *testing.T) {
	s := newServer(t, serveSSE(fixture(t, "stream_reasoning/stream.sse")))
	chunks := collect(t, newModel(t, s).Stream(context.Background(), hello()))
	var reasoning []string
	for _, c := range chunks {
		reasoning = append(reasoning, c.Reasoning)
	}
	if d := cmp.Diff([]string{"", "Compare the", " tenths first.", "", "", "", ""}, reasoning); d != "" {
		t.Errorf("reasoning deltas (-want +got):\n%s", d)
	}
	resp, err := llm.Assemble(newModel(t, s).Stream(context.Background(), hello()))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Reasoning != "Compare the tenths first." || resp.Message.Text() != "9.8 is greater." {
		t.Errorf("reasoning %q text %q", resp.Message.Reasoning, resp.Message.Text())
	}
	if want := (llm.Usage{InputTokens: 18, OutputTokens: 40, ReasoningTokens: 31, Requests: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.Model != "deepseek-reasoner" || resp.FinishReason != llm.FinishStop {
		t.Errorf("model %q finish %q", resp.Model, resp.FinishReason)
	}
}

func TestChunkReasoningField(t *testing.T) {
	cases := map[string]string{
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"reasoning":"step one"}}]}`:                                   "step one",
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"reasoning_content":"first","reasoning":"second"}}]}`:         "first",
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"reasoning":"fallback"}}]}`:          "fallback",
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"reasoning":{"text":"not a string"}}}]}`:                      "",
		`{"id":"x","model":"m","choices":[{"index":1,"delta":{"reasoning_content":"another choice","content":"ignored"}}]}`: "",
	}
	for raw, want := range cases {
		var ev openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			t.Fatal(err)
		}
		c, _ := chunkOf(&ev)
		if c.Reasoning != want || (want == "" && c.Text != "") {
			t.Errorf("%s: reasoning %q text %q, want reasoning %q", raw, c.Reasoning, c.Text, want)
		}
	}
}

func TestStreamErrorEventComesLast(t *testing.T) {
	s := newServer(t, serveSSE(fixture(t, "stream_error_event/stream.sse")))
	var texts []string
	var errs []error
	for c, err := range newModel(t, s).Stream(context.Background(), hello()) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(errs) > 0 {
			t.Fatal("a chunk arrived after the error")
		}
		texts = append(texts, c.Text)
	}
	if len(errs) != 1 || cmp.Diff([]string{"Partial"}, texts) != "" {
		t.Fatalf("texts %q errors %v, want the partial chunk then one error", texts, errs)
	}
	ae := asAPIError(t, errs[0])
	if ae.Type != "server_error" || ae.Message != "The server had an error while processing your request." || ae.StatusCode != 0 || !ae.Retryable() {
		t.Errorf("error = %+v, want a retryable server_error with the event's message", ae)
	}
	if ae.Provider != "openai" || ae.Model != fixtureModel {
		t.Errorf("provider %q model %q", ae.Provider, ae.Model)
	}
}

func TestStreamTruncated(t *testing.T) {
	s := newServer(t, serveSSE(fixture(t, "stream_truncated/stream.sse")))
	resp, err := llm.Assemble(newModel(t, s).Stream(context.Background(), hello()))
	if err == nil {
		t.Fatal("a stream cut before finish_reason ended without an error")
	}
	ae := asAPIError(t, err)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !ae.Retryable() || !strings.Contains(ae.Message, "finish_reason") {
		t.Errorf("error = %v, want a retryable unexpected-EOF APIError", err)
	}
	if resp.Message.Text() != "Cut off in the" {
		t.Errorf("partial text = %q", resp.Message.Text())
	}
}

func TestStreamFromServerThatDoesNotStream(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "text/response.json"), nil))
	_, err := llm.Assemble(newModel(t, s).Stream(context.Background(), hello()))
	if ae := asAPIError(t, err); !strings.Contains(ae.Message, `Content-Type "application/json", not an event stream`) {
		t.Errorf("message = %q, want it to say the reply was not a stream", ae.Message)
	}
}

func TestStreamBadChunk(t *testing.T) {
	s := newServer(t, serveSSE([]byte("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n")))
	_, err := llm.Assemble(newModel(t, s).Stream(context.Background(), hello()))
	ae := asAPIError(t, err)
	if ae.StatusCode != 0 || ae.Err == nil {
		t.Errorf("error = %+v, want status 0 with the decoding error", ae)
	}
}

// holdingServer sends the first event of a stream, then holds the
// connection open until the client goes away or the test ends. started is
// closed when the first event is out, returned when the handler returns.
func holdingServer(t *testing.T) (s *fakeServer, started, returned chan struct{}) {
	t.Helper()
	started, returned = make(chan struct{}), make(chan struct{})
	testDone := make(chan struct{})
	first := sseEvents(fixture(t, "stream_text/stream.sse"))[1]
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		close(started)
		select {
		case <-r.Context().Done():
		case <-testDone:
		}
	})
	t.Cleanup(func() { close(testDone) }) // runs before s.Close
	return s, started, returned
}

func TestStreamCancelMidStream(t *testing.T) {
	s, started, returned := holdingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var got []llm.Chunk
	var lastErr error
	var cancelledAt time.Time
	for c, err := range newModel(t, s).Stream(ctx, hello()) {
		if err != nil {
			lastErr = err
			continue
		}
		got = append(got, c)
		<-started
		select {
		case <-returned:
			t.Fatal("the server stopped holding the stream before the cancel")
		default:
		}
		cancelledAt = time.Now()
		cancel()
	}
	if took := time.Since(cancelledAt); took > 2*time.Second {
		t.Errorf("the stream ended %v after the cancel", took)
	}
	if len(got) != 1 || got[0].Text != "Two" {
		t.Errorf("chunks = %+v, want the first one", got)
	}
	if !errors.Is(lastErr, context.Canceled) {
		t.Fatalf("last error = %v, want context.Canceled", lastErr)
	}
	if _, ok := errors.AsType[*llm.APIError](lastErr); ok || llm.IsRetryable(lastErr) {
		t.Errorf("cancellation came back as %v, want the bare context error", lastErr)
	}
	select {
	case <-returned:
	case <-time.After(2 * time.Second):
		t.Error("the server never saw the connection close")
	}
}

func TestStreamBreakClosesConnection(t *testing.T) {
	s, _, returned := holdingServer(t)
	n := 0
	for _, err := range newModel(t, s).Stream(context.Background(), hello()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d chunks before the break", n)
	}
	select {
	case <-returned:
	case <-time.After(2 * time.Second):
		t.Error("breaking out of the loop left the connection open")
	}
}
