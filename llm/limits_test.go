package llm_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// endless yields chunks made by next forever (until the consumer stops) and
// counts them.
func endless(n *int, next func(i int) llm.Chunk) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for i := 0; ; i++ {
			*n = i + 1
			if !yield(next(i), nil) {
				return
			}
		}
	}
}

func TestAssembleStopsEndlessStreamsAtEachLimit(t *testing.T) {
	kb := strings.Repeat("x", 1024)
	cases := []struct {
		limit string
		next  func(i int) llm.Chunk
		max   int // chunks the default limit lets through, at most
	}{
		{"TextBytes", func(int) llm.Chunk { return llm.Chunk{Text: kb} }, llm.DefaultTextBytes / 1024},
		{"ReasoningBytes", func(int) llm.Chunk { return llm.Chunk{Reasoning: kb} }, llm.DefaultReasoningBytes / 1024},
		{"ToolArgumentBytes", func(int) llm.Chunk {
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{ID: "c1", Name: "f", Arguments: kb}}}
		}, llm.DefaultToolArgumentBytes / 1024},
		{"ToolCalls", func(i int) llm.Chunk {
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: i, ID: "c" + strconv.Itoa(i), Name: "f", Arguments: "{}"}}}
		}, llm.DefaultToolCalls},
		// No IDs, one index, a new name after complete arguments: each
		// chunk starts a new call in the assembler.
		{"ToolCalls", func(i int) llm.Chunk {
			return llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Name: "f" + strconv.Itoa(i%2), Arguments: "{}"}}}
		}, llm.DefaultToolCalls},
	}
	for _, tc := range cases {
		t.Run(tc.limit, func(t *testing.T) {
			var n int
			resp, err := llm.Assemble(endless(&n, tc.next))
			le, ok := errors.AsType[*llm.LimitError](err)
			if !ok || le.Limit != tc.limit {
				t.Fatalf("err = %v, want a *LimitError for %s", err, tc.limit)
			}
			if n > tc.max+2 {
				t.Errorf("the stream ran for %d chunks; the limit allows about %d", n, tc.max)
			}
			if !strings.Contains(err.Error(), "raise Limits."+tc.limit) {
				t.Errorf("err = %v, want it to say how to raise the limit", err)
			}
			if resp == nil {
				t.Fatal("no partial reply")
			}
			if got := int64(len(resp.Message.Text())); got > llm.DefaultTextBytes {
				t.Errorf("the partial reply holds %d bytes of text, over the limit", got)
			}
			if got := int64(len(resp.Message.ToolCalls)); got > llm.DefaultToolCalls {
				t.Errorf("the partial reply holds %d calls, over the limit", got)
			}
		})
	}
}

func TestAssemblerLimitsAreConfigurable(t *testing.T) {
	a := llm.Assembler{Limits: llm.Limits{TextBytes: 10}, Model: "test:m"}
	if err := a.Add(llm.Chunk{Text: "0123456789"}); err != nil {
		t.Fatalf("a reply at the limit: %v", err)
	}
	err := a.Add(llm.Chunk{Text: "!"})
	if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Max != 10 || le.Model != "test:m" {
		t.Fatalf("err = %v, want a LimitError at 10 bytes naming the model", err)
	}
	if err2 := a.Add(llm.Chunk{Text: "more"}); err2 == nil {
		t.Error("Add accepted chunks after the limit")
	}
	if got := a.Response().Message.Text(); got != "0123456789" {
		t.Errorf("text = %q, want what came before the limit", got)
	}
	if llm.IsRetryable(err) {
		t.Error("a LimitError must not be retried")
	}

	bad := llm.Assembler{Limits: llm.Limits{ToolCalls: -1}}
	if err := bad.Add(llm.Chunk{Text: "x"}); err == nil || !strings.Contains(err.Error(), "Limits.ToolCalls is -1") {
		t.Errorf("negative limit: err = %v", err)
	}
}

func TestCallStopsAnEndlessStreamWithinTheModelsLimits(t *testing.T) {
	var n int
	m := &streamer{limits: llm.Limits{TextBytes: 4096}, stream: endless(&n, func(int) llm.Chunk { return llm.Chunk{Text: "abcd"} })}
	g := oneNodeGraph(t, m)
	var err error
	for _, e := range g.Stream(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("hi")})),
		graph.WithEvents(graph.EventMessages)) {
		if e != nil {
			err = e
		}
	}
	if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Max != 4096 {
		t.Fatalf("err = %v, want the model's own TextBytes limit", err)
	}
	if n > 1100 {
		t.Errorf("the stream ran for %d chunks", n)
	}

	// Retry forwards the wrapped model's limits.
	if got := llm.LimitsOf(llm.Retry(m, llm.RetryPolicy{})).TextBytes; got != 4096 {
		t.Errorf("LimitsOf(Retry(m)).TextBytes = %d", got)
	}
	fb := llm.Fallback(m, &streamer{limits: llm.Limits{TextBytes: 8192}})
	if got := llm.LimitsOf(fb); got.TextBytes != 8192 || got.ToolCalls != llm.DefaultToolCalls {
		t.Errorf("LimitsOf(Fallback) = %+v, want the field-wise maximum", got)
	}
}

func TestCallChecksAGeneratedReply(t *testing.T) {
	m := &streamer{limits: llm.Limits{ToolCalls: 2}, reply: &llm.Response{Message: llm.Assistant("",
		llm.ToolCall{ID: "a", Name: "f"}, llm.ToolCall{ID: "b", Name: "f"}, llm.ToolCall{ID: "c", Name: "f"})}}
	_, err := llm.Call(context.Background(), m, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Limit != "ToolCalls" {
		t.Fatalf("err = %v, want a ToolCalls LimitError", err)
	}
}

func TestLimitBodyAndEvents(t *testing.T) {
	l := llm.Limits{BodyBytes: 100}
	_, err := io.ReadAll(l.LimitBody(io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), "m"))
	if err != nil {
		t.Errorf("a body at the limit: %v", err)
	}
	_, err = io.ReadAll(l.LimitBody(io.NopCloser(infinite{}), "m"))
	if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Limit != "BodyBytes" {
		t.Errorf("endless body: err = %v", err)
	}

	events := strings.Repeat("data: "+strings.Repeat("y", 80)+"\r\n\r\n", 1000)
	if _, err := io.ReadAll(l.LimitEvents(io.NopCloser(strings.NewReader(events)), "m")); err != nil {
		t.Errorf("many small events: %v", err)
	}
	// One event that never ends: data lines without a blank line.
	_, err = io.ReadAll(l.LimitEvents(io.NopCloser(infinite{}), "m"))
	if le, ok := errors.AsType[*llm.LimitError](err); !ok || le.Limit != "BodyBytes" {
		t.Errorf("endless event: err = %v", err)
	}
}

// infinite is an endless stream of "data: x\n" lines.
type infinite struct{}

func (infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "data: x\n"[i%8]
	}
	return len(p), nil
}

// streamer is a Model with limits that streams stream and generates reply.
type streamer struct {
	limits llm.Limits
	stream iter.Seq2[llm.Chunk, error]
	reply  *llm.Response
}

func (s *streamer) Name() string       { return "test:streamer" }
func (s *streamer) Limits() llm.Limits { return s.limits }
func (s *streamer) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return s.reply, nil
}
func (s *streamer) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] { return s.stream }
