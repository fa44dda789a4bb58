package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// endless answers with head, then piece until the client goes away.
func endless(status int, ctype, head string, piece func(i int) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(head))
		for i := 0; r.Context().Err() == nil; i++ {
			if _, err := w.Write([]byte(piece(i))); err != nil {
				return
			}
		}
	}
}

func wantLimit(t *testing.T, err error, limit string, start time.Time) {
	t.Helper()
	le, ok := errors.AsType[*llm.LimitError](err)
	if !ok || le.Limit != limit {
		t.Fatalf("err = %v, want an *llm.LimitError for %s", err, limit)
	}
	if !strings.Contains(err.Error(), "anthropic.WithLimits") || !strings.Contains(err.Error(), testModel) {
		t.Errorf("err = %v, want it to name the model and how to raise the limit", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call took %v to fail", d)
	}
}

const streamStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test-1\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"

func TestStreamThatNeverEndsStopsAtTheLimits(t *testing.T) {
	kb := strings.Repeat("a", 1024)
	cases := []struct {
		limit  string
		limits llm.Limits
		head   string
		piece  func(i int) string
	}{
		{"TextBytes", llm.Limits{TextBytes: 64 << 10},
			streamStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			func(int) string {
				return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + kb + "\"}}\n\n"
			}},
		{"ReasoningBytes", llm.Limits{ReasoningBytes: 64 << 10},
			streamStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
			func(int) string {
				return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"" + kb + "\"}}\n\n"
			}},
		{"ToolCalls", llm.Limits{ToolCalls: 8}, streamStart,
			func(i int) string {
				return fmt.Sprintf("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_%d\",\"name\":\"f\",\"input\":{}}}\n\n", i, i)
			}},
		{"BodyBytes", llm.Limits{BodyBytes: 1 << 20}, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"",
			func(int) string { return kb }},
	}
	for _, tc := range cases {
		t.Run(tc.limit, func(t *testing.T) {
			rec := newServer(t, endless(200, "text/event-stream", tc.head, tc.piece))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err := llm.Assemble(rec.model(t, WithLimits(tc.limits)).Stream(ctx, userReq("hi")))
			wantLimit(t, err, tc.limit, start)
		})
	}
}

func TestGenerateWithAnEndlessBodyStopsAtTheBodyLimit(t *testing.T) {
	for _, status := range []int{200, 529} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			rec := newServer(t, endless(status, "application/json", `{"id":"m1","type":"message","content":[{"type":"text","text":"`,
				func(int) string { return strings.Repeat("b", 4096) }))
			start := time.Now()
			_, err := rec.model(t, WithLimits(llm.Limits{BodyBytes: 1 << 20})).Generate(context.Background(), userReq("hi"))
			wantLimit(t, err, "BodyBytes", start)
		})
	}
}

func TestGenerateChecksTheReplyAgainstTheLimits(t *testing.T) {
	body := `{"id":"m1","type":"message","role":"assistant","model":"claude-test-1","stop_reason":"end_turn","content":[{"type":"text","text":"` +
		strings.Repeat("z", 2000) + `"}],"usage":{"input_tokens":1,"output_tokens":1}}`
	rec := newServer(t, replyJSON(200, []byte(body)))
	start := time.Now()
	_, err := rec.model(t, WithLimits(llm.Limits{TextBytes: 1000})).Generate(context.Background(), userReq("hi"))
	wantLimit(t, err, "TextBytes", start)
	if _, err := rec.model(t).Generate(context.Background(), userReq("hi")); err != nil {
		t.Errorf("within the default limits: %v", err)
	}
	if _, err := New(testModel, WithAPIKey("k"), WithLimits(llm.Limits{BodyBytes: -5})); err == nil || !strings.Contains(err.Error(), "BodyBytes is -5") {
		t.Errorf("negative limit: err = %v", err)
	}
}
