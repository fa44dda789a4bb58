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
