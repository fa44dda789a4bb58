package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/tool"
)

// Answer outcomes (Turn.Outcome).
const (
	OutcomeAnswered = "answered"
	OutcomeApproved = "approved"
	OutcomeEdited   = "edited"
	OutcomeRejected = "rejected"
	// OutcomeResult is a client's result for a frontend tool call;
	// OutcomeFailed one that says the tool failed.
	OutcomeResult = "result"
	OutcomeFailed = "failed"
)

// maxText bounds the readable text of one answer or question.
const maxText = 2000

type kindOnly struct {
	Kind string `json:"kind"`
}

// Asked is what an interrupt's value asks, as one readable line.
func Asked(value json.RawMessage) string {
	var k kindOnly
	_ = json.Unmarshal(value, &k)
	switch k.Kind {
	case planexec.AskKind:
		var a planexec.Ask
		_ = json.Unmarshal(value, &a)
		return short(a.Question)
	case planexec.ReviewKind:
		var r planexec.PlanReview
		_ = json.Unmarshal(value, &r)
		return short(fmt.Sprintf("Review the plan (%d steps): %s", len(r.Plan.Steps), r.Plan.Task))
	case tool.ApprovalKind:
		var r tool.ApprovalRequest
		_ = json.Unmarshal(value, &r)
		return short(strings.TrimSpace("Approve " + r.Tool + "? " + r.Summary))
	case tool.ClientCallKind:
		var c tool.ClientCall
		_ = json.Unmarshal(value, &c)
		return short("Run the client tool " + c.Tool)
	}
	var q struct {
		Question string `json:"question"`
	}
	if json.Unmarshal(value, &q) == nil && q.Question != "" {
		return short(q.Question)
	}
	return plain(value)
}

// Describe says, as one readable sentence, what an answer to an interrupt
// whose value is asked decided, and its outcome (Outcome*). The answer is
// read the way the agent reads it (plain words, booleans and LangChain's
// decisions included), so "no" to a tool approval is a rejection here as
// it was for the agent.
func Describe(asked, answer json.RawMessage) (text, outcome string) {
	var k kindOnly
	_ = json.Unmarshal(asked, &k)
	switch k.Kind {
	case tool.ApprovalKind:
		var r tool.ApprovalRequest
		_ = json.Unmarshal(asked, &r)
		var d tool.Decision
		if json.Unmarshal(answer, &d) != nil {
			break
		}
		switch d.Action {
		case tool.ActionApprove:
			return "Approved " + r.Tool, OutcomeApproved
		case tool.ActionEdit:
			return short("Approved " + r.Tool + " with edited arguments: " + compact(d.Arguments)), OutcomeEdited
		case tool.ActionReject:
			if m := strings.TrimSpace(d.Message); m != "" {
				return short("Rejected " + r.Tool + ": " + m), OutcomeRejected
			}
			return "Rejected " + r.Tool, OutcomeRejected
		}
	case planexec.ReviewKind:
		var d planexec.ReviewDecision
		if json.Unmarshal(answer, &d) != nil {
			break
		}
		switch d.Action {
		case planexec.ReviewApprove:
			return "Approved the plan", OutcomeApproved
		case planexec.ReviewEdit:
			if d.Plan == nil {
				return "Edited the plan", OutcomeEdited
			}
			titles := make([]string, len(d.Plan.Steps))
			for i, s := range d.Plan.Steps {
				titles[i] = fmt.Sprintf("%d. %s", i+1, s.Title)
			}
			return short("Edited the plan: " + strings.Join(titles, "; ")), OutcomeEdited
		case planexec.ReviewReject:
			if f := strings.TrimSpace(d.Feedback); f != "" {
				return short("Rejected the plan: " + f), OutcomeRejected
			}
			return "Rejected the plan", OutcomeRejected
		}
	case planexec.AskKind:
		var q planexec.Ask
		_ = json.Unmarshal(asked, &q)
		var a planexec.AskAnswer
		if json.Unmarshal(answer, &a) != nil {
			break
		}
		switch {
		case a.Choice != "":
			return short(a.Choice), OutcomeAnswered
		case a.Values != nil:
			return short(formText(q.Fields, a.Values)), OutcomeAnswered
		default:
			return short(a.Text), OutcomeAnswered
		}
	case tool.ClientCallKind:
		var c tool.ClientCall
		_ = json.Unmarshal(asked, &c)
		var res tool.ClientResult
		if json.Unmarshal(answer, &res) == nil {
			if res.Error != "" {
				return short("The client's " + c.Tool + " failed: " + res.Error), OutcomeFailed
			}
			return short("Result of " + c.Tool + ": " + res.Content), OutcomeResult
		}
	}
	return plain(answer), OutcomeAnswered
}

// formText is a form's values as "Label: value" pairs, in the form's field
// order, then any values the form does not name, by key.
func formText(fields []planexec.Field, values map[string]any) string {
	var parts []string
	done := map[string]bool{}
	for _, f := range fields {
		v, ok := values[f.Key]
		if !ok {
			continue
		}
		done[f.Key] = true
		parts = append(parts, fmt.Sprintf("%s: %s", cmpOr(f.Label, f.Key), valueText(v)))
	}
	var rest []string
	for k := range values {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s: %s", k, valueText(values[k])))
	}
	return strings.Join(parts, ", ")
}

func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// plain is a JSON value as text: a string as itself, anything else
// compact.
func plain(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return short(s)
	}
	return short(compact(v))
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

func short(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
