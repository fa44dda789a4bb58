package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
)

// A model may reply with blank text (say, "\n\n" before nothing); the API
// refuses text blocks without non-whitespace text, so sending that reply
// back made every later turn fail. Blank text is now left out.
func TestBlankTextIsNotSentBack(t *testing.T) {
	call := llm.ToolCall{ID: "toolu_1", Name: "f", Arguments: "{}"}
	body := paramsJSON(t, &llm.Request{Messages: []llm.Message{
		llm.User("go"), llm.Assistant("\n\n ", call), llm.ToolResult(call, "  "), llm.Assistant(" "), llm.User("again"),
	}})
	b, err := json.Marshal(body["messages"])
	if err != nil {
		t.Fatal(err)
	}
	var msgs []struct {
		Role    string
		Content []map[string]any
	}
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		for _, blk := range m.Content {
			if blk["type"] == "text" && strings.TrimSpace(blk["text"].(string)) == "" {
				t.Errorf("message %d (%s) holds a blank text block", i, m.Role)
			}
		}
	}
}

// A reply with malformed tool calls, streamed or not, leaves a history
// whose next request this package can build, once llm.Call has repaired
// it.
func TestMalformedCallsDoNotStickTheThread(t *testing.T) {
	reply := llm.Assistant("", llm.ToolCall{ID: "", Name: ""}, llm.ToolCall{ID: "a:b", Name: "x y", Arguments: "[1"})
	history := []llm.Message{llm.User("go"), reply}
	for _, c := range reply.ToolCalls {
		history = append(history, llm.ToolError(c, "Error: malformed call"))
	}
	m, err := New(testModel, WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.params(&llm.Request{Messages: llm.RepairHistory(history)}); err != nil {
		t.Fatalf("the next request cannot be built: %v", err)
	}
}
