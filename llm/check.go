package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// maxToolName and maxCallID are the longest tool name and call ID every
// provider accepts.
const (
	maxToolName = 64
	maxCallID   = 64
)

// ValidToolName reports whether every provider accepts name as a tool
// name: 1 to 64 ASCII letters, digits, '_' and '-'.
func ValidToolName(name string) bool { return validToken(name, maxToolName) }

// validCallID reports whether every provider accepts id as a tool-call ID
// (Anthropic allows only letters, digits, '_' and '-').
func validCallID(id string) bool { return validToken(id, maxCallID) }

func validToken(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for _, r := range s {
		if !nameRune(r) {
			return false
		}
	}
	return true
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// argsObject reports whether args is one JSON object.
func argsObject(args string) bool {
	t := bytes.TrimSpace([]byte(args))
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// CheckHistory reports the first thing in msgs that a provider would
// refuse, or nil. It checks what model replies and tool runs can get
// wrong, and RepairHistory fixes: every assistant tool call has an ID (1
// to 64 letters, digits, '_' or '-') that no other call in the history
// uses, a name ValidToolName accepts and arguments that are a JSON object
// (or empty); it is answered right after its assistant message, in call
// order, by exactly one tool message; every tool message answers such a
// call. It does not check what only the caller controls (roles, parts).
//
// RepairHistory(msgs) always passes CheckHistory; tests use it to assert
// that a history can be sent.
func CheckHistory(msgs []Message) error {
	seen := map[string]int{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == RoleTool {
			return fmt.Errorf("llm: message %d is a tool message answering %q, which is not a call of the assistant message right before it", i, m.ToolCallID)
		}
		if m.Role != RoleAssistant {
			continue
		}
		at := i
		for j, c := range m.ToolCalls {
			switch {
			case !validCallID(c.ID):
				return fmt.Errorf("llm: message %d, tool call %d: ID %q is not 1 to %d letters, digits, '_' or '-'", at, j, c.ID, maxCallID)
			case !ValidToolName(c.Name):
				return fmt.Errorf("llm: message %d, tool call %d: name %q is not 1 to %d letters, digits, '_' or '-'", at, j, c.Name, maxToolName)
			case !argsObject(c.Arguments) && !isBlank(c.Arguments):
				return fmt.Errorf("llm: message %d, tool call %d (%s): the arguments are not a JSON object: %.80q", at, j, c.Name, c.Arguments)
			}
			if k, dup := seen[c.ID]; dup {
				return fmt.Errorf("llm: message %d, tool call %d: ID %q is used by message %d too", at, j, c.ID, k)
			}
			seen[c.ID] = at
			i++
			if i >= len(msgs) || msgs[i].Role != RoleTool || msgs[i].ToolCallID != c.ID {
				return fmt.Errorf("llm: message %d, tool call %d (%s): not answered by the tool message right after it (in call order)", at, j, c.ID)
			}
		}
	}
	return nil
}

// fixReplyIDs gives a fresh ID to every call of a reply whose ID is
// missing, malformed, or used already (earlier in the history or in the
// reply), so that the tool node and records, which key on call IDs, see
// each call apart. It changes msg in place.
func fixReplyIDs(msg *Message, history []Message) {
	if len(msg.ToolCalls) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	var calls []ToolCall
	for i, c := range msg.ToolCalls {
		if validCallID(c.ID) && !seen[c.ID] {
			seen[c.ID] = true
			continue
		}
		if calls == nil {
			calls = append([]ToolCall(nil), msg.ToolCalls...)
		}
		calls[i].ID = NewCallID()
		seen[calls[i].ID] = true
	}
	if calls != nil {
		msg.ToolCalls = calls
	}
}
