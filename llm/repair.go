package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// MissingResult is the text of the tool message RepairHistory inserts for a
// call that has no result.
const MissingResult = "No result: this call was not run to completion (it was interrupted, cancelled or rejected before it finished). Do not assume it took effect."

// Names RepairHistory gives calls whose name no provider accepts.
const (
	// MissingToolName replaces an empty tool name.
	MissingToolName = "missing_tool_name"
	// InvalidToolNamePrefix starts the replacement of a name with
	// characters providers refuse (the rest is the name with those
	// characters made '_').
	InvalidToolNamePrefix = "invalid_name_"
)

// RepairHistory returns msgs made acceptable to every provider (see
// CheckHistory), whatever a model replied or a run left behind:
//
//   - each assistant tool call is followed, right after its assistant
//     message and in call order, by the tool message answering it; results
//     found later in the history are moved up, and a call with no result
//     gets a tool error message (MissingResult) so the model knows it did
//     not happen;
//   - when a call has several results, the last one is kept; a call ID
//     used again by a later assistant message is paired with the results
//     that come before that message;
//   - tool messages that answer no earlier call are left out;
//   - a malformed call is rewritten, as the model will see it: a missing,
//     malformed or repeated ID gets a new one derived from the message ID
//     and the call's position (its result follows it); an empty name
//     becomes MissingToolName and a name with characters providers refuse
//     becomes InvalidToolNamePrefix and the name with those characters
//     made '_'; arguments that are not a JSON object become
//     {"invalid_json": "<the text as written>"} (empty arguments become
//     {}). The tool message answering such a call (the tool node's error
//     for an unknown tool or bad arguments) tells the model what was
//     wrong, so it can call again correctly.
//
// msgs itself is not modified; when nothing needs repair it is returned as
// is. Call repairs every request; use this to
// inspect or store the repaired history.
func RepairHistory(msgs []Message) []Message {
	out, _ := repair(msgs)
	return out
}

func repair(msgs []Message) ([]Message, bool) {
	if historyValid(msgs) && callsWellFormed(msgs) {
		return msgs, false
	}
	return repairAll(msgs), true
}

// repairAll rebuilds a history that needs repair (see repair). It is a
// function of its own, kept out of line, so that repair's frame on the
// stack of every model call stays small: repairAll's locals (messages and
// calls copied by value) took 2.6 KB, which made a task goroutine's stack
// outgrow its first 8 KB (and be copied) in a model call nested a few
// frames deep.
//
//go:noinline
func repairAll(msgs []Message) []Message {
	// Where each call ID is called and answered.
	callers := map[string][]int{}
	results := map[string][]int{}
	for i, m := range msgs {
		switch m.Role {
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				callers[c.ID] = append(callers[c.ID], i)
			}
		case RoleTool:
			results[m.ToolCallID] = append(results[m.ToolCallID], i)
		}
	}
	consumed := map[int]bool{}
	used := map[string]bool{}
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case RoleTool:
			continue // placed after its call, or dropped as an orphan
		case RoleAssistant:
			if len(m.ToolCalls) == 0 {
				out = append(out, m)
				continue
			}
			m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
			answers := make([]Message, 0, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				r, found := resultFor(msgs, c.ID, i, callers, results, consumed)
				fixed := fixCall(c, m.ID, j, used)
				used[fixed.ID] = true
				m.ToolCalls[j] = fixed
				if found {
					r.ToolCallID = fixed.ID
					answers = append(answers, r)
				} else {
					answers = append(answers, ToolError(fixed, MissingResult))
				}
			}
			out = append(out, m)
			out = append(out, answers...)
		default:
			out = append(out, m)
		}
	}
	return out
}

// resultFor finds the result of call id made by the assistant message at
// position at: the last result not yet used that comes after it and
// before the next assistant message calling the same ID.
func resultFor(msgs []Message, id string, at int, callers, results map[string][]int, consumed map[int]bool) (Message, bool) {
	end := len(msgs)
	for _, p := range callers[id] {
		if p > at {
			end = p
			break
		}
	}
	ps := results[id]
	for k := len(ps) - 1; k >= 0; k-- {
		if p := ps[k]; p > at && p < end && !consumed[p] {
			consumed[p] = true
			return msgs[p], true
		}
	}
	return Message{}, false
}

// fixCall returns c made well formed (see RepairHistory); used holds the
// IDs already given out in the history.
func fixCall(c ToolCall, msgID string, index int, used map[string]bool) ToolCall {
	if !validCallID(c.ID) || used[c.ID] {
		sum := sha256.Sum256([]byte(msgID + "\x00" + strconv.Itoa(index) + "\x00" + c.ID))
		id := "call_" + hex.EncodeToString(sum[:12])
		for n := 2; used[id]; n++ {
			id = "call_" + hex.EncodeToString(sum[:12]) + "_" + strconv.Itoa(n)
		}
		c.ID = id
	}
	if !ValidToolName(c.Name) {
		c.Name = safeToolName(c.Name)
	}
	if !argsObject(c.Arguments) {
		if isBlank(c.Arguments) {
			c.Arguments = "{}"
		} else {
			b, _ := json.Marshal(map[string]string{"invalid_json": c.Arguments})
			c.Arguments = string(b)
		}
	}
	return c
}

// safeToolName is the replacement of a name ValidToolName refuses.
func safeToolName(name string) string {
	if name == "" {
		return MissingToolName
	}
	b := []byte(InvalidToolNamePrefix)
	for _, r := range name {
		if len(b) >= maxToolName {
			break
		}
		if nameRune(r) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
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

// callsWellFormed reports whether every call has a valid ID used once, a
// valid name and a JSON object (or nothing) as arguments.
func callsWellFormed(msgs []Message) bool {
	var seen map[string]bool
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if !validCallID(c.ID) || !ValidToolName(c.Name) || !argsObject(c.Arguments) && !isBlank(c.Arguments) {
				return false
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			if seen[c.ID] {
				return false
			}
			seen[c.ID] = true
		}
	}
	return true
}
