package eval

import (
	"encoding/json"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// rejectedPrefix starts the tool message tool.Node writes for a call a
// person rejected.
const rejectedPrefix = "A person rejected this call"

// Trajectory returns the tool calls of msgs' assistant messages in order,
// each with the result of the tool message answering it: Status "ok",
// "error" (an error tool message) or "rejected" (a person declined it;
// Reason holds their message), and "" when no result came back. These
// are the agent's own calls: a sub-agent's inner calls live in its own
// state, not in the conversation.
func Trajectory(msgs []llm.Message) []ToolCall {
	results := map[string]llm.Message{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID != "" {
			results[m.ToolCallID] = m
		}
	}
	var out []ToolCall
	for _, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			tc := ToolCall{Name: c.Name, Args: argsJSON(c.Arguments)}
			if res, ok := results[c.ID]; ok {
				tc.Result = res.Text()
				switch {
				case res.IsError && strings.HasPrefix(tc.Result, rejectedPrefix):
					tc.Status = "rejected"
					if _, msg, ok := strings.Cut(tc.Result, "Their message: "); ok {
						tc.Reason = msg
					}
				case res.IsError:
					tc.Status, tc.Reason = "error", tc.Result
				default:
					tc.Status = "ok"
				}
			}
			out = append(out, tc)
		}
	}
	return out
}

// argsJSON returns a call's argument text as JSON: itself when it is
// valid JSON, {} when empty, else a JSON string of the text.
func argsJSON(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// SplitTurns splits a conversation at its user messages: each turn is a
// user message, the last assistant text before the next one, and the tool
// calls in between. Messages before the first user message (a system
// prompt) belong to no turn.
func SplitTurns(msgs []llm.Message) []TurnRecord {
	var out []TurnRecord
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		seg := msgs[start+1 : end]
		t := TurnRecord{User: msgs[start].Text(), ToolCalls: Trajectory(seg)}
		th := Thread{Messages: seg}
		t.Response = th.FinalResponse()
		out = append(out, t)
	}
	for i, m := range msgs {
		if m.Role == llm.RoleUser {
			flush(i)
			start = i
		}
	}
	flush(len(msgs))
	return out
}
