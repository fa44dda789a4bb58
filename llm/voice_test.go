package llm_test

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// A reply asked for under WithVoice streams every chunk (reasoning, text,
// tool-call pieces) tagged with the voice, the tool-call keys kept; one
// asked for without a voice carries no voice key.
func TestCallTagsStreamedChunksWithTheVoice(t *testing.T) {
	chunks := []llm.Chunk{
		{Reasoning: "Hmm."},
		{Text: "Add the label."},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "log"}}},
	}
	for _, voice := range []string{"reviewer", ""} {
		m := &callModel{chunks: chunks}
		b := graph.New(history)
		b.AddNode("review", func(ctx context.Context, s graph.State) (graph.Output, error) {
			resp, err := llm.Call(llm.WithVoice(ctx, voice), m, &llm.Request{Messages: history.Get(s)})
			if err != nil {
				return nil, err
			}
			return graph.Writes(history.Set([]llm.Message{resp.Message})), nil
		})
		b.SetEntry("review")
		b.AddEdge("review", graph.END)
		g, err := b.Compile()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ev, err := range g.Stream(context.Background(), graph.Writes(history.Set([]llm.Message{llm.User("check this")})),
			graph.WithEvents(graph.EventMessages)) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != graph.EventMessages {
				continue
			}
			n++
			if got := ev.Message.Meta[llm.MetaVoice]; got != voice {
				t.Errorf("voice %q: a %s chunk has voice %q", voice, ev.Message.Part, got)
			}
			if ev.Message.Part == graph.PartToolCall && ev.Message.Meta["call_id"] != "call_1" {
				t.Errorf("voice %q: the tool-call chunk lost its keys: %v", voice, ev.Message.Meta)
			}
		}
		if n != 3 {
			t.Errorf("voice %q: %d chunks streamed, want 3", voice, n)
		}
	}
	if llm.VoiceOf(llm.WithVoice(context.Background(), "")) != "" || llm.VoiceOf(llm.WithVoice(context.Background(), "critic")) != "critic" {
		t.Error("VoiceOf does not return what WithVoice set")
	}
}
