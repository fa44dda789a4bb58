package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// endlessServer answers with header and then writes piece until the client
// goes away, counting the bytes written.
func endlessServer(t *testing.T, status int, ctype, head, piece string, written *atomic.Int64) *fakeServer {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(head))
		for r.Context().Err() == nil {
			n, err := w.Write([]byte(piece))
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
}

func wantLimit(t *testing.T, err error, limit string, start time.Time) {
	t.Helper()
	le, ok := errors.AsType[*llm.LimitError](err)
	if !ok || le.Limit != limit {
		t.Fatalf("err = %v, want an *llm.LimitError for %s", err, limit)
	}
	if !strings.Contains(err.Error(), "openai.WithLimits") || !strings.Contains(err.Error(), fixtureModel) {
		t.Errorf("err = %v, want it to name the model and how to raise the limit", err)
	}
	if llm.IsRetryable(err) {
		t.Errorf("a LimitError must not be retried: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call took %v to fail", d)
	}
}

func TestStreamThatNeverEndsStopsAtTheTextLimit(t *testing.T) {
	var written atomic.Int64
	ev := `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 1000) + `"}}]}` + "\n\n"
	s := endlessServer(t, 200, "text/event-stream", "", ev, &written)
	m := newModel(t, s, WithLimits(llm.Limits{TextBytes: 100 << 10}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := llm.Assemble(m.Stream(ctx, hello()))
	wantLimit(t, err, "TextBytes", start)
	if n := len(resp.Message.Text()); n > 100<<10 {
		t.Errorf("assembled %d bytes of text, over the limit", n)
	}
	if n := written.Load(); n > 64<<20 {
		t.Errorf("the server wrote %d bytes before the client stopped", n)
	}
}

func TestStreamWithOneEndlessEventStopsAtTheBodyLimit(t *testing.T) {
	var written atomic.Int64
	s := endlessServer(t, 200, "text/event-stream", `data: {"choices":[{"index":0,"delta":{"content":"`, strings.Repeat("b", 4096), &written)
	m := newModel(t, s, WithLimits(llm.Limits{BodyBytes: 1 << 20}))
	start := time.Now()
	_, err := llm.Assemble(m.Stream(context.Background(), hello()))
	wantLimit(t, err, "BodyBytes", start)
}

func TestStreamOfEndlessToolCallsStopsAtTheCallLimit(t *testing.T) {
	var n atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; r.Context().Err() == nil; i++ {
			_, err := fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`+"\n\n", i, i)
			n.Add(1)
			if err != nil {
				return
			}
		}
	})
	m := newModel(t, s, WithLimits(llm.Limits{ToolCalls: 10}))
	start := time.Now()
	resp, err := llm.Assemble(m.Stream(context.Background(), hello()))
	wantLimit(t, err, "ToolCalls", start)
	if len(resp.Message.ToolCalls) > 10 {
		t.Errorf("assembled %d calls", len(resp.Message.ToolCalls))
	}
}

func TestGenerateWithAnEndlessBodyStopsAtTheBodyLimit(t *testing.T) {
	for _, status := range []int{200, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var written atomic.Int64
			s := endlessServer(t, status, "application/json", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"`, strings.Repeat("c", 4096), &written)
			m := newModel(t, s, WithLimits(llm.Limits{BodyBytes: 1 << 20}))
			start := time.Now()
			_, err := m.Generate(context.Background(), hello())
			wantLimit(t, err, "BodyBytes", start)
		})
	}
}

func TestGenerateChecksTheReplyAgainstTheLimits(t *testing.T) {
	var calls []string
	for i := range 5 {
		calls = append(calls, fmt.Sprintf(`{"id":"c%d","type":"function","function":{"name":"f","arguments":"{}"}}`, i))
	}
	body := `{"id":"x","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[` + strings.Join(calls, ",") + `]}}]}`
	s := newServer(t, serveJSON(200, []byte(body), nil))
	start := time.Now()
	_, err := newModel(t, s, WithLimits(llm.Limits{ToolCalls: 4})).Generate(context.Background(), hello())
	wantLimit(t, err, "ToolCalls", start)
	if _, err := newModel(t, s).Generate(context.Background(), hello()); err != nil {
		t.Errorf("within the default limits: %v", err)
	}
	if got := newModel(t, s).Limits(); got != llm.DefaultLimits() {
		t.Errorf("Limits() = %+v, want the defaults", got)
	}
}

func TestNewRejectsNegativeLimits(t *testing.T) {
	_, err := New("m", WithBaseURL("http://127.0.0.1:1/v1"), WithLimits(llm.Limits{TextBytes: -1}))
	if err == nil || !strings.Contains(err.Error(), "Limits.TextBytes is -1") {
		t.Errorf("err = %v", err)
	}
}

// A long stream is bounded event by event, not as a whole, whatever content
// type the server gives it: only an endless event or reply is cut.
func TestLongStreamOfSmallEventsIsNotCutByTheBodyLimit(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for range 200 {
			_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("d", 100) + `"}}]}` + "\n\n"))
		}
		_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	})
	resp, err := llm.Assemble(newModel(t, s, WithLimits(llm.Limits{BodyBytes: 4096})).Stream(context.Background(), hello()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.Message.Text()); n != 20000 {
		t.Errorf("assembled %d bytes, want 20000", n)
	}
}
