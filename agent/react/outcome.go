package react

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Undone returns the calls of records that did not happen — a person
// rejected them, or they failed (bad arguments, the tool's error) — and
// that no later successful call of the same tool made up for, in the order
// they were made. An agent reads it from its Calls key to tell what it did
// from what it only tried: a write a person turned down, with their reason
// (Record.Error), is never something the agent did.
func Undone(records map[string]tool.Record) []tool.Record {
	var failed []tool.Record
	lastOK := map[string]int{} // a tool's latest successful call, by graph step
	for _, r := range records {
		if r.Error == "" && r.Approval != tool.OutcomeRejected {
			lastOK[r.Tool] = max(lastOK[r.Tool], r.Step+1)
			continue
		}
		failed = append(failed, r)
	}
	out := failed[:0]
	for _, r := range failed {
		if ok, seen := lastOK[r.Tool]; !seen || ok-1 <= r.Step {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b tool.Record) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(len(a.CallID), len(b.CallID)), strings.Compare(a.CallID, b.CallID))
	})
	return out
}

// RejectionReason returns the message a person gave when rejecting the
// call of r ("" when they gave none, or r was not rejected).
func RejectionReason(r tool.Record) string {
	if r.Approval != tool.OutcomeRejected {
		return ""
	}
	reason := strings.TrimPrefix(r.Error, "rejected by a person")
	return strings.TrimSpace(strings.TrimPrefix(reason, ":"))
}

// ground ends a final answer with a line naming the calls of the current
// turn (since the person's last message) that did not happen, so the
// answer cannot claim them: what the tool node recorded outranks what the
// model wrote.
func (a *agent) ground(s graph.State, msg llm.Message) llm.Message {
	msgs := a.msgs.Get(s)
	turn := map[string]bool{}
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != llm.RoleUser; i-- {
		for _, c := range msgs[i].ToolCalls {
			turn[c.ID] = true
		}
	}
	if len(turn) == 0 {
		return msg
	}
	records := map[string]tool.Record{}
	for id, r := range a.calls.Get(s) {
		if turn[r.CallID] || turn[id] {
			records[id] = r
		}
	}
	undone := Undone(records)
	if len(undone) == 0 {
		return msg
	}
	lines := make([]string, len(undone))
	for i, r := range undone {
		switch reason := RejectionReason(r); {
		case r.Approval == tool.OutcomeRejected && reason != "":
			lines[i] = fmt.Sprintf("%s was rejected by you: %q", r.Tool, reason)
		case r.Approval == tool.OutcomeRejected:
			lines[i] = r.Tool + " was rejected by you"
		default:
			lines[i] = fmt.Sprintf("%s failed: %s", r.Tool, r.Error)
		}
	}
	note := "Not done: " + strings.Join(lines, "; ") + "."
	out := msg.Clone()
	if text := strings.TrimSpace(out.Text()); text != "" {
		note = "\n\n" + note
	}
	out.Parts = append(out.Parts, llm.Text(note))
	return out
}
