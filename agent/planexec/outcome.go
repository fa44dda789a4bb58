package planexec

import (
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/tool"
)

// The outcomes of a call that did not happen (CallOutcome.Outcome).
const (
	// CallRejected: a person turned the call down at approval.
	CallRejected = "rejected"
	// CallFailed: the call was refused for its arguments, or the tool
	// failed.
	CallFailed = "failed"
)

// CallOutcome is a tool call of a step that did not happen, and that no
// later successful call of the same tool made up for: a write a person
// rejected (with their reason), or a call that failed. A step's result is
// the model's own account; its Undone calls are what the tool node
// recorded, so the delivery and every summary can tell what was done from
// what was only tried.
type CallOutcome struct {
	// Tool is the tool's name, Arguments the call's arguments as the
	// model wrote them.
	Tool      string `json:"tool"`
	Arguments string `json:"arguments,omitempty"`
	// Outcome is CallRejected or CallFailed.
	Outcome string `json:"outcome"`
	// Reason is the person's message (CallRejected; "" when they gave
	// none) or the error (CallFailed).
	Reason string `json:"reason,omitempty"`
}

// String describes the call in a sentence, as reports give it.
func (c CallOutcome) String() string {
	call := c.Tool
	if a := strings.TrimSpace(c.Arguments); a != "" && a != "{}" {
		call += " " + a
	}
	switch {
	case c.Outcome == CallRejected && c.Reason != "":
		return fmt.Sprintf("%s was rejected by the person, who said: %q", call, c.Reason)
	case c.Outcome == CallRejected:
		return call + " was rejected by the person (no reason given)"
	}
	return fmt.Sprintf("%s failed: %s", call, c.Reason)
}

// undone reads a step loop's call records into the calls that did not
// happen.
func undone(records map[string]tool.Record) []CallOutcome {
	var out []CallOutcome
	for _, r := range react.Undone(records) {
		if r.Tool == AskToolName {
			continue // a question that could not be asked was asked again or answered around
		}
		c := CallOutcome{Tool: r.Tool, Arguments: r.Arguments, Outcome: CallFailed, Reason: r.Error}
		if r.Approval == tool.OutcomeRejected {
			c.Outcome, c.Reason = CallRejected, react.RejectionReason(r)
		}
		out = append(out, c)
	}
	return out
}

// undoneText says, in one line, which calls of a step did not happen, or
// is "".
func undoneText(calls []CallOutcome) string {
	if len(calls) == 0 {
		return ""
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = c.String()
	}
	return "not carried out: " + strings.Join(parts, "; ")
}
