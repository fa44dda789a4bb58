package lcwire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
)

func TestMessages(t *testing.T) {
	raw := json.RawMessage(`[
		{"type":"human","id":"1","content":"hi"},
		{"type":"ai","id":"2","content":[{"type":"text","text":"let me "},"look"],"tool_calls":[{"id":"c1","name":"lookup","args":{"q":"x"}}],"additional_kwargs":{"reasoning_content":"think"}},
		{"type":"tool","id":"3","content":"no","tool_call_id":"c1","name":"lookup","status":"error"},
		{"role":"assistant","id":"4","content":"done","tool_calls":[{"id":"c2","name":"noargs"}]}
	]`)
	ms, err := Messages(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || ms[0].Role != llm.RoleUser || ms[0].Text() != "hi" {
		t.Fatalf("%+v", ms)
	}
	if ms[1].Text() != "let me look" || ms[1].Reasoning != "think" || ms[1].ToolCalls[0].Arguments != `{"q":"x"}` {
		t.Errorf("ai: %+v", ms[1])
	}
	if !ms[2].IsError || ms[2].ToolCallID != "c1" || ms[2].ToolName != "lookup" || ms[2].Role != llm.RoleTool {
		t.Errorf("tool: %+v", ms[2])
	}
	if ms[3].Role != llm.RoleAssistant || ms[3].ToolCalls[0].Arguments != "{}" {
		t.Errorf("role form: %+v", ms[3])
	}
	for _, bad := range []string{`{}`, `[{"type":"robot"}]`, `[{"type":"ai","content":7}]`} {
		if _, err := Messages(json.RawMessage(bad)); err == nil {
			t.Errorf("%s read", bad)
		}
	}
	if _, err := Messages(json.RawMessage(`[{"type":"robot"}]`)); !strings.Contains(err.Error(), "messages[0]") {
		t.Errorf("the error does not say which message: %v", err)
	}
}
