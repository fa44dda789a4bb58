package openaiapi

import (
	"encoding/json"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// A completion's reply is the agent's own: the builder's reviewer, whose
// messages carry a voice (name), is left out of the content, while the
// drafts' text (unnamed) is kept.
func TestReplyLeavesOutInternalVoices(t *testing.T) {
	tr := newTranslator(func(Delta, *ProgressEvent) {})
	for _, upd := range []string{
		`{"answer":{"messages":[{"id":"d1","type":"ai","content":"the reply"}]}}`,
		`{"review":{"messages":[{"id":"v1","type":"ai","name":"reviewer","content":"No changes needed."}]}}`,
	} {
		tr.add(db.Event{Event: "updates", Data: json.RawMessage(upd)})
	}
	if got := tr.content.String(); got != "the reply" {
		t.Errorf("the reply's content is %q, want only the agent's own text", got)
	}
}

// The voice's streamed tokens (llm.WithVoice: the chunk's name) are not
// streamed as the reply either, nor its reasoning.
func TestStreamLeavesOutInternalVoices(t *testing.T) {
	var content, reasoning string
	tr := newTranslator(func(d Delta, _ *ProgressEvent) { content += d.Content; reasoning += d.ReasoningContent })
	for _, ev := range []string{
		`[{"id":"d1","type":"AIMessageChunk","content":"the reply"},{}]`,
		`[{"id":"v1","type":"AIMessageChunk","name":"reviewer","content":"Add the label.","additional_kwargs":{"reasoning_content":"hmm"}},{}]`,
	} {
		tr.add(db.Event{Event: "messages", Data: json.RawMessage(ev)})
	}
	if content != "the reply" || reasoning != "" {
		t.Errorf("streamed content %q, reasoning %q; want only the agent's own text", content, reasoning)
	}
}
