package llm_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/llm"
)

func assemble(chunks ...llm.Chunk) *llm.Response {
	a := llm.Assembler{ID: "msg_test"}
	for _, c := range chunks {
		a.Add(c)
	}
	return a.Response()
}

func deltas(ds ...llm.ToolCallDelta) llm.Chunk { return llm.Chunk{ToolCalls: ds} }

func TestAssemblerToolCallShapes(t *testing.T) {
	weather := llm.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Lyon"}`}
	clock := llm.ToolCall{ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`}
	cases := []struct {
		name   string
		chunks []llm.Chunk
		want   []llm.ToolCall
	}{
		{
			name: "id and name first, then argument fragments, indices interleaved",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather"}),
				deltas(llm.ToolCallDelta{Index: 1, ID: "call_b", Name: "get_time"}),
				deltas(llm.ToolCallDelta{Index: 0, Arguments: `{"ci`}),
				deltas(llm.ToolCallDelta{Index: 1, Arguments: `{"tz":`}),
				deltas(llm.ToolCallDelta{Index: 0, Arguments: `ty":"Lyon"}`}, llm.ToolCallDelta{Index: 1, Arguments: `"UTC"}`}),
			},
			want: []llm.ToolCall{weather, clock},
		},
		{
			name: "arguments before the name and the ID",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, Arguments: `{"city":`}),
				deltas(llm.ToolCallDelta{Index: 0, Arguments: `"Lyon"}`}),
				deltas(llm.ToolCallDelta{Index: 0, Name: "get_weather"}),
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a"}),
			},
			want: []llm.ToolCall{weather},
		},
		{
			name: "the higher index arrives first: calls still come out by index",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 1, ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`}),
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Lyon"}`}),
			},
			want: []llm.ToolCall{weather, clock},
		},
		{
			name: "every call numbered 0 but with its own ID",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Lyon"}`}),
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`}),
			},
			want: []llm.ToolCall{weather, clock},
		},
		{
			name: "the ID repeated on every fragment, index changing",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":`}),
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`}),
				deltas(llm.ToolCallDelta{Index: 3, ID: "call_a", Arguments: `"Lyon"}`}),
			},
			want: []llm.ToolCall{weather, clock},
		},
		{
			name: "the name repeated on every fragment is kept once",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":`}),
				deltas(llm.ToolCallDelta{Index: 0, Name: "get_weather", Arguments: `"Lyon"}`}),
			},
			want: []llm.ToolCall{weather},
		},
		{
			name: "a fragmented name is joined",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_"}),
				deltas(llm.ToolCallDelta{Index: 0, Name: "weather", Arguments: `{"city":"Lyon"}`}),
			},
			want: []llm.ToolCall{weather},
		},
		{
			name: "no IDs, index reused: a new name after complete arguments starts a call",
			chunks: []llm.Chunk{
				deltas(llm.ToolCallDelta{Index: 0, Name: "get_weather", Arguments: `{"city":"Lyon"}`}),
				deltas(llm.ToolCallDelta{Index: 0, Name: "get_time", Arguments: `{"tz":"UTC"}`}),
			},
			want: []llm.ToolCall{{Name: "get_weather", Arguments: `{"city":"Lyon"}`}, {Name: "get_time", Arguments: `{"tz":"UTC"}`}},
		},
		{
			name:   "no arguments at all become {}",
			chunks: []llm.Chunk{deltas(llm.ToolCallDelta{Index: 0, ID: "call_c", Name: "list_files"})},
			want:   []llm.ToolCall{{ID: "call_c", Name: "list_files", Arguments: "{}"}},
		},
		{
			name:   "an ID alone is not a call",
			chunks: []llm.Chunk{deltas(llm.ToolCallDelta{Index: 2, ID: "call_x"}), {Text: "hi"}},
			want:   nil,
		},
	}
	ignoreGenerated := cmp.Comparer(func(a, b string) bool {
		// IDs the assembler generates are random; compare their prefix.
		if a == "" || b == "" {
			return strings.HasPrefix(a+b, "call_")
		}
		return a == b
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := assemble(c.chunks...)
			got := resp.Message.ToolCalls
			for _, call := range got {
				if call.ID == "" {
					t.Errorf("call %s has no ID", call.Name)
				}
			}
			if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty(), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".ID"
			}, ignoreGenerated)); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
			wantFinish := llm.FinishStop
			if len(c.want) > 0 {
				wantFinish = llm.FinishToolCalls
			}
			if resp.FinishReason != wantFinish {
				t.Errorf("finish = %q, want %q", resp.FinishReason, wantFinish)
			}
		})
	}
}

func TestAssemblerTextReasoningUsage(t *testing.T) {
	resp := assemble(
		llm.Chunk{Model: "m-1", Usage: &llm.Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 1}},
		llm.Chunk{Reasoning: "First, ", ReasoningSignature: "c2ln"},
		llm.Chunk{Reasoning: "think.", ReasoningSignature: "Ng=="},
		llm.Chunk{Text: "Hel"},
		llm.Chunk{Text: "lo"},
		llm.Chunk{FinishReason: llm.FinishLength, Usage: &llm.Usage{OutputTokens: 37, ReasoningTokens: 12}},
	)
	want := &llm.Response{
		Message: llm.Message{ID: "msg_test", Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text("Hello")},
			Reasoning: "First, think.", ReasoningSignature: "c2lnNg=="},
		Usage:        llm.Usage{InputTokens: 120, CachedInputTokens: 100, OutputTokens: 37, ReasoningTokens: 12},
		FinishReason: llm.FinishLength,
		Model:        "m-1",
	}
	if d := cmp.Diff(want, resp); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}
}

func TestAssemblerStopWithCallsBecomesToolCalls(t *testing.T) {
	resp := assemble(deltas(llm.ToolCallDelta{ID: "c", Name: "f", Arguments: "{}"}), llm.Chunk{FinishReason: llm.FinishStop})
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish = %q, want tool_calls", resp.FinishReason)
	}
}

// TestAssemblerAnyInterleaving splits several tool calls into random
// fragments, places each call's ID-and-name fragment anywhere in its own
// sequence, interleaves the calls at random and checks the assembler always
// rebuilds the same calls in index order.
func TestAssemblerAnyInterleaving(t *testing.T) {
	calls := []llm.ToolCall{
		{ID: "call_0", Name: "search", Arguments: `{"query":"braces { inside } strings","limit":5}`},
		{ID: "call_1", Name: "read_file", Arguments: `{"index":2}`},
		{ID: "call_2", Name: "write_note", Arguments: `{"title":"plan","body":"step one; step two; step three"}`},
		{ID: "call_3", Name: "noop", Arguments: `{}`},
	}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var seqs [][]llm.ToolCallDelta
		for i, c := range calls {
			var seq []llm.ToolCallDelta
			args := c.Arguments
			for len(args) > 0 {
				n := 1 + rng.IntN(min(len(args), 9))
				seq = append(seq, llm.ToolCallDelta{Index: i, Arguments: args[:n]})
				args = args[n:]
			}
			head := llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name}
			at := rng.IntN(len(seq) + 1)
			seq = append(seq[:at], append([]llm.ToolCallDelta{head}, seq[at:]...)...)
			seqs = append(seqs, seq)
		}
		var a llm.Assembler
		for {
			var live []int
			for i, s := range seqs {
				if len(s) > 0 {
					live = append(live, i)
				}
			}
			if len(live) == 0 {
				break
			}
			// One chunk holds fragments of one or two calls.
			var ch llm.Chunk
			for range 1 + rng.IntN(2) {
				i := live[rng.IntN(len(live))]
				if len(seqs[i]) == 0 {
					continue
				}
				ch.ToolCalls = append(ch.ToolCalls, seqs[i][0])
				seqs[i] = seqs[i][1:]
			}
			a.Add(ch)
		}
		if d := cmp.Diff(calls, a.Response().Message.ToolCalls); d != "" {
			t.Fatalf("seed %d: calls (-want +got):\n%s", seed, d)
		}
	}
}

func TestAssembleStreamError(t *testing.T) {
	boom := fmt.Errorf("connection reset")
	stream := func(yield func(llm.Chunk, error) bool) {
		if !yield(llm.Chunk{Text: "partial"}, nil) {
			return
		}
		yield(llm.Chunk{}, boom)
	}
	resp, err := llm.Assemble(stream)
	if err != boom {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if resp.Message.Text() != "partial" {
		t.Errorf("partial text = %q, want %q", resp.Message.Text(), "partial")
	}
}

// BenchmarkAssemble2000 assembles a 2,000-chunk reply: 1,500 text chunks and
// two tool calls whose 250 argument fragments each interleave.
func BenchmarkAssemble2000(b *testing.B) {
	chunks := make([]llm.Chunk, 0, 2000)
	for range 1500 {
		chunks = append(chunks, llm.Chunk{Text: "word "})
	}
	chunks = append(chunks,
		deltas(llm.ToolCallDelta{Index: 0, ID: "call_a", Name: "search"}),
		deltas(llm.ToolCallDelta{Index: 1, ID: "call_b", Name: "write_note"}))
	for i := range 498 {
		chunks = append(chunks, deltas(llm.ToolCallDelta{Index: i % 2, Arguments: `"x":1,`}))
	}
	b.ReportAllocs()
	for b.Loop() {
		var a llm.Assembler
		a.ID = "msg_bench"
		for _, c := range chunks {
			a.Add(c)
		}
		if r := a.Response(); len(r.Message.ToolCalls) != 2 {
			b.Fatal("lost a call")
		}
	}
}
