package llm

// MissingResult is the text of the tool message RepairHistory inserts for a
// call that has no result.
const MissingResult = "No result: this call was not run to completion (it was interrupted, cancelled or rejected before it finished). Do not assume it took effect."

// RepairHistory returns msgs made acceptable to every provider:
//
//   - each assistant tool call is followed, right after its assistant
//     message and in call order, by the tool message answering it; results
//     found later in the history are moved up, and a call with no result
//     gets a tool error message (MissingResult) so the model knows it did
//     not happen;
//   - when a call has several results, the last one is kept;
//   - tool messages that answer no earlier call are left out.
//
// msgs itself is not modified; when nothing needs repair it is returned as
// is. Call repairs every request; use this to inspect or store the repaired
// history.
func RepairHistory(msgs []Message) []Message {
	out, _ := repair(msgs)
	return out
}

func repair(msgs []Message) ([]Message, bool) {
	if historyValid(msgs) {
		return msgs, false
	}
	// The last result for each call ID.
	results := map[string]Message{}
	for _, m := range msgs {
		if m.Role == RoleTool {
			results[m.ToolCallID] = m
		}
	}
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case RoleTool:
			continue // placed after its call, or dropped as an orphan
		case RoleAssistant:
			out = append(out, m)
			for _, c := range m.ToolCalls {
				if r, ok := results[c.ID]; ok {
					out = append(out, r)
					delete(results, c.ID) // a call ID reused later gets no second copy
				} else {
					out = append(out, ToolError(c, MissingResult))
				}
			}
		default:
			out = append(out, m)
		}
	}
	return out, true
}

// historyValid reports whether every tool call is answered right after its
// assistant message, in order, exactly once, and every tool message answers
// such a call. Checked first so valid histories (the common case) cost no
// allocation.
func historyValid(msgs []Message) bool {
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == RoleTool {
			return false // not consumed by a preceding assistant message
		}
		if m.Role != RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			i++
			if i >= len(msgs) || msgs[i].Role != RoleTool || msgs[i].ToolCallID != c.ID {
				return false
			}
		}
	}
	return true
}
