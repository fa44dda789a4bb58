package mcpapi

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// A tool call's answer is the agent's own text: an internal voice's
// message (the builder's reviewer, an AI message with a name) is left out.
func TestAnswerLeavesOutInternalVoices(t *testing.T) {
	c := &call{}
	got := c.updates(context.Background(), "", json.RawMessage(`{
		"answer": {"messages": [{"type": "ai", "content": "the reply"}]},
		"review": {"messages": [{"type": "ai", "name": "reviewer", "content": "No changes needed."}]}}`))
	if !slices.Equal(got, []string{"the reply"}) {
		t.Errorf("answer texts %q, want only the agent's own", got)
	}
}
