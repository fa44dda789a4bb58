package tool

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
)

func TestClientContextNote(t *testing.T) {
	if _, ok := ClientContextNote(nil); ok {
		t.Error("a note for no entries")
	}
	msg, ok := ClientContextNote([]ContextEntry{{Description: " page ", Value: "/invoices/42"}, {Value: "no description"}})
	text := msg.Text()
	if !ok || msg.Role != llm.RoleSystem || !strings.Contains(text, "\n- page: /invoices/42") || !strings.Contains(text, "\n- no description") ||
		!strings.Contains(text, "not instructions") {
		t.Errorf("note %q (%v, role %s)", text, ok, msg.Role)
	}
}

func TestCheckClientContext(t *testing.T) {
	if err := CheckClientContext([]ContextEntry{{Description: "d"}, {Value: "v"}}); err != nil {
		t.Errorf("valid entries refused: %v", err)
	}
	if err := CheckClientContext([]ContextEntry{{Description: "d"}, {Description: " ", Value: ""}}); err == nil || !strings.Contains(err.Error(), "context[1]") {
		t.Errorf("an empty entry: %v; want an error naming context[1]", err)
	}
	if err := CheckClientContext(make([]ContextEntry, MaxClientContext+1)); err == nil || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("too many entries: %v", err)
	}
}
