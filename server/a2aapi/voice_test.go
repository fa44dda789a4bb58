package a2aapi

import (
	"encoding/json"
	"testing"
)

// A task's history and answer are the conversation: an internal voice's
// message (the builder's reviewer, an AI message with a name) is left
// out, so the answer is the agent's reply, not the reviewer's approval.
func TestHistoryLeavesOutInternalVoices(t *testing.T) {
	h := historyOf(json.RawMessage(`{"messages": [
		{"id": "h1", "type": "human", "content": "Can I return them?"},
		{"id": "a1", "type": "ai", "content": "Yes, we email a label."},
		{"id": "v1", "type": "ai", "name": "reviewer", "content": "Accurate and kind. No changes needed."}]}`), 0, "task-1", "ctx-1")
	if len(h) != 2 || h[1].ID != "a1" {
		t.Fatalf("history %d messages, last %v; want the person's and the reply", len(h), h[len(h)-1].ID)
	}
	if m := lastAgent(h); m == nil || m.ID != "a1" {
		t.Errorf("the answer is %v, want the reply a1", m)
	}
}
