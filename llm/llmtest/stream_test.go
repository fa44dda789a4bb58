package llmtest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// richTurn has reasoning, multi-byte text and two tool calls.
func richTurn() llmtest.Turn {
	return llmtest.Reasoning("think about größe ✓", "héllo wörld, ünïcode ✓ done").WithCalls(
		llmtest.Call("search", `{"query":"tide tables","limit":5}`),
		llmtest.Call("fetch", `{"url":"https://example.com/ü"}`),
	)
}

func TestStreamReassemblesToGenerate(t *testing.T) {
	for _, interleave := range []bool{false, true} {
		for _, size := range []int{1, 2, 3, 7, 1000} {
			opts := []llmtest.Option{llmtest.WithChunkSize(size)}
			if interleave {
				opts = append(opts, llmtest.WithInterleavedCalls())
			}
			// Two models with one script, so tool-call IDs match too.
			want := generate(t, llmtest.New(opts...).Reply(richTurn()), ask("q"))
			m := llmtest.New(opts...).Reply(richTurn())
			var chunks []llm.Chunk
			for c, err := range m.Stream(t.Context(), ask("q")) {
				if err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, c)
			}
			got, err := llm.Assemble(func(yield func(llm.Chunk, error) bool) {
				for _, c := range chunks {
					if !yield(c, nil) {
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, cmpopts.IgnoreFields(llm.Message{}, "ID")); d != "" {
				t.Errorf("size %d, interleave %v: assembled stream differs from Generate (-want +got):\n%s", size, interleave, d)
			}
			checkShape(t, chunks, size, interleave)
		}
	}
}

// checkShape checks the chunks look like a provider's: bounded pieces, a
// call's ID and name before its arguments, usage only at the end.
func checkShape(t *testing.T, chunks []llm.Chunk, size int, interleave bool) {
	t.Helper()
	var order []int
	seen := map[int]bool{}
	for i, c := range chunks {
		if utf8.RuneCountInString(c.Text) > size || utf8.RuneCountInString(c.Reasoning) > size {
			t.Errorf("size %d: chunk %d is too big: %+v", size, i, c)
		}
		if (c.Usage != nil) != (i == len(chunks)-1) || (c.FinishReason != "") != (i == len(chunks)-1) {
			t.Errorf("size %d: chunk %d of %d has usage %v, finish %q; want them in the last only", size, i, len(chunks), c.Usage, c.FinishReason)
		}
		for _, d := range c.ToolCalls {
			order = append(order, d.Index)
			if !seen[d.Index] {
				seen[d.Index] = true
				if d.ID == "" || d.Name == "" || d.Arguments != "" {
					t.Errorf("size %d: first fragment of call %d is %+v, want ID and name only", size, d.Index, d)
				}
			} else if d.ID != "" || d.Name != "" || utf8.RuneCountInString(d.Arguments) > size {
				t.Errorf("size %d: later fragment of call %d is %+v", size, d.Index, d)
			}
		}
	}
	// In order, call 0's fragments all come before call 1's; interleaved,
	// call 1 starts right after call 0's first fragment.
	if len(order) < 3 {
		t.Fatalf("only %d tool-call fragments", len(order))
	}
	if interleave != (order[1] == 1) {
		t.Errorf("size %d, interleave %v: fragment indices %v", size, interleave, order)
	}
}

func TestStreamFailAfter(t *testing.T) {
	cut := errors.New("connection dropped")
	m := llmtest.New(llmtest.WithChunkSize(2)).Reply(
		llmtest.Text("abcdefgh").FailAfter(2, cut),
		llmtest.Text("abcdefgh").FailAfter(2, cut),
		llmtest.Text("ab").FailAfter(99, cut),
	)
	var got string
	var gotErr error
	for c, err := range m.Stream(t.Context(), ask("q")) {
		if err != nil {
			gotErr = err
			break
		}
		got += c.Text
	}
	if got != "abcd" || gotErr != cut {
		t.Errorf("FailAfter(2): got %q then %v, want \"abcd\" then the error", got, gotErr)
	}
	if _, err := m.Generate(t.Context(), ask("q")); err != cut {
		t.Errorf("Generate of a FailAfter turn: %v", err)
	}
	// Past the end: the whole reply, then the error.
	resp, err := llm.Assemble(m.Stream(t.Context(), ask("q")))
	if resp.Message.Text() != "ab" || err != cut {
		t.Errorf("FailAfter beyond the end: %q, %v", resp.Message.Text(), err)
	}
}

func TestStreamStatusError(t *testing.T) {
	m := llmtest.New().Reply(llmtest.StatusError(500, "oops"))
	_, err := llm.Assemble(m.Stream(t.Context(), ask("q")))
	if ae, ok := errors.AsType[*llm.APIError](err); !ok || ae.StatusCode != 500 {
		t.Errorf("stream of a StatusError: %v", err)
	}
}

func TestStreamCancelAndBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New(llmtest.WithChunkSize(1)).Reply(
			llmtest.Text("abcdef").Paced(time.Second),
			llmtest.Text("abcdef").Paced(time.Hour),
			llmtest.Text("abcdef").Paced(time.Second),
		)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(2500*time.Millisecond, cancel)
		var got string
		var gotErr error
		for c, err := range m.Stream(ctx, ask("q")) {
			if err != nil {
				gotErr = err
				break
			}
			got += c.Text
		}
		if got != "ab" || !errors.Is(gotErr, context.Canceled) {
			t.Errorf("cancelled at 2.5s with 1s per chunk: got %q then %v", got, gotErr)
		}

		// A timeout around the model cuts a slow stream.
		_, err := llm.Assemble(llm.WithTimeout(m, time.Minute).Stream(t.Context(), ask("q")))
		if _, ok := errors.AsType[*llm.TimeoutError](err); !ok {
			t.Errorf("slow stream under a timeout: %v", err)
		}

		// Generate waits the whole pace: 7 chunks (6 letters, the end).
		start := time.Now()
		generate(t, m, ask("q"))
		if took := time.Since(start); took != 7*time.Second {
			t.Errorf("Generate of a paced reply took %v, want 7s", took)
		}
	})
}
