package openaiapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/internal/answer"
	"github.com/trellis-agents/trellis/tool"
)

// pending is one interrupt a thread waits on, as the run service records
// it (LangGraph's __interrupt__ entries).
type pending struct {
	ID     string          `json:"id"`
	Value  json.RawMessage `json:"value"`
	Schema json.RawMessage `json:"response_schema,omitempty"`
	// Old is where threads recorded before the rename kept the schema.
	Old json.RawMessage `json:"schema,omitempty"`
}

// schema is the answer's JSON Schema, wherever the record keeps it.
func (p pending) schema() json.RawMessage {
	if len(p.Schema) > 0 {
		return p.Schema
	}
	return p.Old
}

// kind reads the payload's kind member.
func (p pending) kind() string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(p.Value, &k)
	return k.Kind
}

// pendingFrom reads a thread row's interrupts (by task, each a list),
// ordered by interrupt ID so the first is stable.
func pendingFrom(raw json.RawMessage) []pending {
	var byTask map[string][]pending
	if len(raw) == 0 || json.Unmarshal(raw, &byTask) != nil {
		return nil
	}
	var out []pending
	for _, list := range byTask {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b pending) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Interaction kinds.
const (
	kindQuestion = "question"
	kindPlan     = "plan_review"
	kindApproval = "tool_approval"
	kindOther    = "other"
)

// Waiting is one interrupt a thread waits on, as the run service records
// it on the thread (id, value, response_schema).
type Waiting struct {
	ID     string
	Value  json.RawMessage
	Schema json.RawMessage
}

// WaitingFrom reads a thread row's interrupts (db.Thread.Interrupts),
// ordered by interrupt ID.
func WaitingFrom(raw json.RawMessage) []Waiting {
	ps := pendingFrom(raw)
	out := make([]Waiting, len(ps))
	for i, p := range ps {
		out[i] = Waiting{ID: p.ID, Value: p.Value, Schema: p.schema()}
	}
	return out
}

// Describe renders what an interrupt asks as readable text and as an
// Interaction, as this wire presents it; other wires (AG-UI) reuse it.
func Describe(w Waiting) (string, *Interaction) {
	return describe(pending{ID: w.ID, Value: w.Value, Schema: w.Schema})
}

// describe renders what p asks as readable text and as an Interaction.
func describe(p pending) (string, *Interaction) {
	ia := &Interaction{ID: p.ID, Kind: kindOther, Schema: p.schema(), Payload: p.Value}
	var b strings.Builder
	problems := func(ps []string) {
		if len(ps) > 0 {
			fmt.Fprintf(&b, "That answer did not fit: %s\n\n", strings.Join(ps, "; "))
		}
	}
	switch p.kind() {
	case planexec.AskKind:
		var a planexec.Ask
		_ = json.Unmarshal(p.Value, &a)
		ia.Kind, ia.Mode, ia.Question, ia.Options, ia.Problems = kindQuestion, string(a.Mode), a.Question, a.Options, a.Problems
		problems(a.Problems)
		b.WriteString(a.Question)
		switch a.Mode {
		case planexec.AskSelect:
			b.WriteString("\n\n")
			for i, o := range a.Options {
				fmt.Fprintf(&b, "%d. %s\n", i+1, o)
			}
			b.WriteString("\nReply with a number or an option.")
		case planexec.AskForm:
			ia.Fields, _ = json.Marshal(a.Fields)
			b.WriteString("\n\n")
			for _, f := range a.Fields {
				fmt.Fprintf(&b, "- %s (%s): %s\n", f.Label, f.Key, fieldHint(f))
			}
			b.WriteString("\nReply with one line per field (key: value), or with a JSON object of the values.")
		}
	case planexec.ReviewKind:
		var r planexec.PlanReview
		_ = json.Unmarshal(p.Value, &r)
		ia.Kind = kindPlan
		ia.Plan, _ = json.Marshal(r.Plan)
		if r.Problem != "" {
			ia.Problems = []string{r.Problem}
		}
		problems(ia.Problems)
		if r.Revised {
			fmt.Fprintf(&b, "The plan changed while it ran (done: %s; changed: %s), so here it is again for review.\n", orNone(r.Finished), orNone(r.Changed))
		}
		fmt.Fprintf(&b, "Here is the plan: %s\n\n", r.Plan.Task)
		for i, st := range r.Plan.Steps {
			fmt.Fprintf(&b, "%d. %s [%s]", i+1, st.Title, st.ID)
			if len(st.DependsOn) > 0 {
				fmt.Fprintf(&b, " (after %s)", strings.Join(st.DependsOn, ", "))
			}
			if st.Description != "" {
				fmt.Fprintf(&b, ": %s", st.Description)
			}
			b.WriteByte('\n')
		}
		b.WriteString("\nReply yes to run it, no to make another, other text to say what to change, or edit followed by the plan as JSON.")
	case tool.ApprovalKind:
		var r tool.ApprovalRequest
		_ = json.Unmarshal(p.Value, &r)
		ia.Kind, ia.Tool, ia.Arguments, ia.Summary = kindApproval, r.Tool, r.Arguments, r.Summary
		if r.Problem != "" {
			ia.Problems = []string{r.Problem}
		}
		problems(ia.Problems)
		fmt.Fprintf(&b, "Approve this call? %s %s", r.Tool, compact(r.Arguments))
		if r.Summary != "" {
			fmt.Fprintf(&b, "\n%s", r.Summary)
		}
		b.WriteString("\n\nReply yes to run it, no (or reject: why) to refuse it, or edit followed by the arguments as JSON.")
	case router.QuestionKind:
		var q router.Question
		_ = json.Unmarshal(p.Value, &q)
		ia.Kind, ia.Mode, ia.Question = kindQuestion, string(planexec.AskText), q.Question
		b.WriteString(q.Question)
	default:
		fmt.Fprintf(&b, "The run waits for an answer to: %s", compact(p.Value))
		if s := p.schema(); len(s) > 0 {
			fmt.Fprintf(&b, "\nThe answer fits this schema: %s", compact(s))
		}
	}
	return strings.TrimRight(b.String(), "\n"), ia
}

// fieldHint says what a form field takes.
func fieldHint(f planexec.Field) string {
	var h string
	switch f.Type {
	case planexec.FieldNumber:
		h = "a number"
		switch {
		case f.Min != nil && f.Max != nil:
			h = fmt.Sprintf("a number from %v to %v", *f.Min, *f.Max)
		case f.Min != nil:
			h = fmt.Sprintf("a number of at least %v", *f.Min)
		case f.Max != nil:
			h = fmt.Sprintf("a number of at most %v", *f.Max)
		}
	case planexec.FieldSelect:
		h = "one of " + strings.Join(f.Options, ", ")
	case planexec.FieldBoolean:
		h = "yes or no"
	default:
		h = "text"
	}
	if f.Required {
		return h + ", required"
	}
	return h + ", optional"
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// editPrefix matches "edit" followed by JSON.
var editPrefix = regexp.MustCompile(`(?is)^\s*(?:edit|编辑|修改)\s*[:：]?\s*(\{.*)$`)

// rejectPrefix matches "reject: reason" / "no: reason".
var rejectPrefix = regexp.MustCompile(`(?is)^\s*(?:reject|no|deny|拒绝|否)\s*[:：,，]\s*(.+)$`)

// ParseAnswer maps a person's plain text to the resume value w expects
// (a number or label for a choice, yes/no for a review or an approval,
// "field: value" lines for a form), or says what did not fit, as this
// wire reads answers; other wires (A2A) reuse it.
func ParseAnswer(w Waiting, text string) (json.RawMessage, []string) {
	return parseAnswer(pending{ID: w.ID, Value: w.Value, Schema: w.Schema}, text)
}

// parseAnswer maps a person's text to the resume value p expects, or
// says what was wrong. The run service checks the value against the
// interrupt's schema; the agent may still ask again (a form value out of
// bounds, an option that is not one).
func parseAnswer(p pending, text string) (json.RawMessage, []string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, []string{"the answer is empty"}
	}
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	switch p.kind() {
	case planexec.AskKind:
		var a planexec.Ask
		_ = json.Unmarshal(p.Value, &a)
		switch a.Mode {
		case planexec.AskSelect:
			choice := text
			if n, err := strconv.Atoi(strings.TrimRight(text, ".)")); err == nil {
				if n < 1 || n > len(a.Options) {
					return nil, []string{fmt.Sprintf("%d is not an option: choose 1 to %d", n, len(a.Options))}
				}
				choice = a.Options[n-1]
			}
			// The agent's own check, so an answer that does not fit is
			// asked again with its words, before any run.
			picked, probs := a.Check(planexec.ChoiceAnswer(choice))
			if len(probs) > 0 {
				return nil, probs
			}
			return enc(map[string]string{"choice": picked}), nil
		case planexec.AskForm:
			values, probs := parseForm(a.Fields, text)
			if len(probs) > 0 {
				return nil, probs
			}
			norm, probs := a.Check(planexec.FormAnswer(values))
			if len(probs) > 0 {
				return nil, probs
			}
			return json.RawMessage(`{"values":` + norm + `}`), nil
		}
		return enc(map[string]string{"text": text}), nil
	case planexec.ReviewKind:
		if v, ok := answer.Word(text); ok {
			return enc(v), nil
		}
		if m := editPrefix.FindStringSubmatch(text); m != nil {
			var plan planexec.Plan
			if err := json.Unmarshal([]byte(m[1]), &plan); err != nil {
				return nil, []string{"edit must be followed by the plan as a JSON object {task, steps}: " + err.Error()}
			}
			return enc(planexec.EditPlan(plan)), nil
		}
		return enc(planexec.RejectPlan(text)), nil
	case tool.ApprovalKind:
		if v, ok := answer.Word(text); ok {
			return enc(v), nil
		}
		if m := editPrefix.FindStringSubmatch(text); m != nil {
			args := json.RawMessage(strings.TrimSpace(m[1]))
			if !json.Valid(args) || !answer.Object(args) {
				return nil, []string{"edit must be followed by the arguments as a JSON object"}
			}
			return enc(tool.Edit(args)), nil
		}
		if m := rejectPrefix.FindStringSubmatch(text); m != nil {
			return enc(tool.Reject(strings.TrimSpace(m[1]))), nil
		}
		return nil, []string{fmt.Sprintf("%q is not a decision: reply yes or no (approve/reject, 是/否), reject: followed by why, or edit followed by the arguments as JSON", short(text))}
	case router.QuestionKind:
		return enc(text), nil
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text), nil
	}
	return enc(text), nil
}

// parseForm reads a form answer: a JSON object, or one "field: value"
// per line (or separated by ";"), a field named by its key or label; a
// one-field form takes the whole text as its value.
func parseForm(fields []planexec.Field, text string) (map[string]any, []string) {
	if answer.Object([]byte(text)) {
		var values map[string]any
		if err := json.Unmarshal([]byte(text), &values); err != nil {
			return nil, []string{"the JSON object does not parse: " + err.Error()}
		}
		return values, nil
	}
	values := map[string]any{}
	var probs []string
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ';' || r == '；' })
	if len(fields) == 1 && !strings.ContainsAny(text, ":：") {
		lines = []string{fields[0].Key + ": " + text}
	}
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(strings.Replace(line, "：", ":", 1), ":")
		if !ok {
			probs = append(probs, fmt.Sprintf("%q is not a field: value line", short(line)))
			continue
		}
		k, v = strings.TrimSpace(strings.TrimLeft(k, "-* ")), strings.TrimSpace(v)
		f, found := fieldNamed(fields, k)
		if !found {
			probs = append(probs, fmt.Sprintf("%q is not a field of this form (the fields are %s)", k, fieldKeys(fields)))
			continue
		}
		values[f.Key] = fieldValue(f, v)
	}
	return values, probs
}

func fieldNamed(fields []planexec.Field, name string) (planexec.Field, bool) {
	for _, f := range fields {
		if strings.EqualFold(f.Key, name) || strings.EqualFold(f.Label, name) {
			return f, true
		}
	}
	return planexec.Field{}, false
}

func fieldKeys(fields []planexec.Field) string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.Key
	}
	return strings.Join(keys, ", ")
}

// fieldValue turns a line's text into the field's value: numbers stay text
// (the agent reads them), yes/no words become booleans, a select field's
// number picks its option.
func fieldValue(f planexec.Field, v string) any {
	switch f.Type {
	case planexec.FieldBoolean:
		if b, ok := answer.Word(v); ok {
			return b
		}
	case planexec.FieldSelect:
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(f.Options) {
			return f.Options[n-1]
		}
	}
	return v
}

func short(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// orNone joins IDs, or says none.
func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
