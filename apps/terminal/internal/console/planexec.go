package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/graph"
)

// PlanAsk answers planexec questions: free text, a choice among options
// (by number or text), or a form filled field by field, each value checked
// as it is typed (CheckField). planexec checks the whole answer again and
// asks again with the problems, which are shown.
func PlanAsk(p *Prompter, in graph.InterruptInfo) (any, bool, error) {
	a, ok := planexec.AskFrom(in)
	if !ok {
		return nil, false, nil
	}
	fmt.Fprintf(p.Out, "\nQuestion: %s\n", a.Question)
	for _, pr := range a.Problems {
		fmt.Fprintf(p.Out, "  (the last answer did not fit: %s)\n", pr)
	}
	switch a.Mode {
	case planexec.AskSelect:
		choice, err := p.choose(a.Options)
		return planexec.ChoiceAnswer(choice), true, err
	case planexec.AskForm:
		values := map[string]any{}
		for _, f := range a.Fields {
			v, set, err := p.field(f)
			if err != nil {
				return nil, true, err
			}
			if set {
				values[f.Key] = v
			}
		}
		return planexec.FormAnswer(values), true, nil
	default:
		line, err := p.Line("> ")
		return planexec.TextAnswer(line), true, err
	}
}

// choose lists options and reads one, by number or by its text.
func (p *Prompter) choose(options []string) (string, error) {
	return p.chooseOptional(options, false)
}

// chooseOptional is choose that, when optional, takes an empty line as no
// choice ("").
func (p *Prompter) chooseOptional(options []string, optional bool) (string, error) {
	for i, o := range options {
		fmt.Fprintf(p.Out, "  %d) %s\n", i+1, o)
	}
	for {
		line, err := p.Line("Choose > ")
		if err != nil {
			return "", err
		}
		if line == "" && optional {
			return "", nil
		}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(options) {
			return options[n-1], nil
		}
		if slices.Contains(options, line) {
			return line, nil
		}
		fmt.Fprintf(p.Out, "Type a number from 1 to %d.\n", len(options))
	}
}

// field reads one form field, checking each value as it is typed
// against the field's type and bounds (the same rules planexec applies),
// so that a value that does not fit is asked again at once, with the
// reason, instead of after the whole form; set is false when an optional
// field is left empty.
func (p *Prompter) field(f planexec.Field) (v any, set bool, err error) {
	hint := Hint(f)
	if f.Type == planexec.FieldSelect {
		fmt.Fprintf(p.Out, "%s (%s):\n", f.Label, hint)
		if !f.Required {
			fmt.Fprintln(p.Out, "  (leave empty to skip)")
		}
		c, err := p.chooseOptional(f.Options, !f.Required)
		return c, err == nil && c != "", err
	}
	for {
		line, err := p.Line(fmt.Sprintf("%s (%s) > ", f.Label, hint))
		if err != nil {
			return nil, false, err
		}
		if line == "" {
			if !f.Required {
				return nil, false, nil
			}
			fmt.Fprintln(p.Out, "This field is required.")
			continue
		}
		v, problem := CheckField(f, line)
		if problem != "" {
			fmt.Fprintln(p.Out, problem+"; try again.")
			continue
		}
		return v, true, nil
	}
}

// Hint describes what a form field takes, shown in its prompt: the type
// in words, whether it is required, its bounds, and for yes/no fields the
// letters to type.
func Hint(f planexec.Field) string {
	var parts []string
	switch f.Type {
	case planexec.FieldBoolean:
		parts = append(parts, "y/n")
	case planexec.FieldNumber:
		parts = append(parts, "number")
	case planexec.FieldSelect:
		parts = append(parts, "choose one")
	default:
		parts = append(parts, "text")
	}
	if f.Required {
		parts = append(parts, "required")
	} else {
		parts = append(parts, "optional")
	}
	unit := ""
	if f.Type == planexec.FieldText || f.Type == "" {
		unit = " characters"
	}
	switch {
	case f.Min != nil && f.Max != nil:
		parts = append(parts, bound(f.Min)+" to "+bound(f.Max)+unit)
	case f.Min != nil:
		parts = append(parts, "at least "+bound(f.Min)+unit)
	case f.Max != nil:
		parts = append(parts, "at most "+bound(f.Max)+unit)
	}
	return strings.Join(parts, ", ")
}

// CheckField parses a typed line as the field's value and checks it
// against the field's bounds. It returns the value, or a problem in words
// ("Most study slots per day must be at most 8").
func CheckField(f planexec.Field, line string) (any, string) {
	line = strings.TrimSpace(line)
	switch f.Type {
	case planexec.FieldNumber:
		n, err := strconv.ParseFloat(line, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Sprintf("%s must be a number; %q is not", f.Label, line)
		}
		if f.Min != nil && n < *f.Min {
			return nil, fmt.Sprintf("%s must be at least %s", f.Label, bound(f.Min))
		}
		if f.Max != nil && n > *f.Max {
			return nil, fmt.Sprintf("%s must be at most %s", f.Label, bound(f.Max))
		}
		return n, ""
	case planexec.FieldBoolean:
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, ""
		case "n", "no", "false":
			return false, ""
		}
		return nil, fmt.Sprintf("%s takes y or n", f.Label)
	case planexec.FieldSelect:
		for _, o := range f.Options {
			if strings.EqualFold(line, o) {
				return o, ""
			}
		}
		return nil, fmt.Sprintf("%s must be one of %s", f.Label, strings.Join(f.Options, ", "))
	}
	n := float64(utf8.RuneCountInString(line))
	if f.Min != nil && n < *f.Min {
		return nil, fmt.Sprintf("%s must be at least %s characters long", f.Label, bound(f.Min))
	}
	if f.Max != nil && n > *f.Max {
		return nil, fmt.Sprintf("%s must be at most %s characters long (it has %d)", f.Label, bound(f.Max), int(n))
	}
	return line, ""
}

func bound(f *float64) string {
	if f == nil {
		return "any"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// PlanView shows a planexec run: its Print shows the events and its
// Review answers plan reviews, sharing what was shown so that a plan just
// printed as "Plan ready" is not printed again for the review. The zero
// value is ready; use one per session.
type PlanView struct {
	shown string // the JSON of the plan last printed
	// streamed is the text of the delivery printed as it streamed (the
	// delivered event then only ends the line).
	streamed strings.Builder
}

// PlanReview answers plan reviews, always showing the plan (see PlanView
// to avoid showing it twice).
func PlanReview(p *Prompter, in graph.InterruptInfo) (any, bool, error) {
	return new(PlanView).Review(p, in)
}

// Review answers planexec plan reviews: it shows the plan (unless it was
// just shown) and asks to approve it (y), reject it with feedback for the
// planner (n), or edit it (e: the whole plan as one line of JSON).
func (v *PlanView) Review(p *Prompter, in graph.InterruptInfo) (any, bool, error) {
	r, ok := planexec.ReviewFrom(in)
	if !ok {
		return nil, false, nil
	}
	if v.seen(r.Plan) && r.Problem == "" {
		fmt.Fprintln(p.Out, "\nReview the plan above.")
	} else {
		fmt.Fprintln(p.Out, "\nThe plan:")
		WritePlan(p.Out, r.Plan)
	}
	if r.Problem != "" {
		fmt.Fprintf(p.Out, "  (asked again: %s)\n", r.Problem)
	}
	for {
		line, err := p.Line("Run this plan? y = yes, n = no and say why, e = edit it > ")
		if err != nil {
			return nil, true, err
		}
		switch line {
		case "y", "yes":
			return planexec.ApprovePlan(), true, nil
		case "n", "no":
			fb, err := p.Line("What should change? > ")
			return planexec.RejectPlan(fb), true, err
		case "e", "edit":
			plan, ok, err := p.editPlan(r.Plan)
			if err != nil {
				return nil, true, err
			}
			if !ok {
				continue
			}
			return planexec.EditPlan(plan), true, nil
		default:
			fmt.Fprintln(p.Out, "Please answer y, n or e (q quits and keeps the thread).")
		}
	}
}

// editPlan gets an edited plan: in the person's editor (Prompter.Editor)
// on the plan as indented JSON when the "e" was typed, else as one line of
// JSON at the prompt. The result must be a valid plan with no fields the
// plan schema does not have; ok is false (after saying why) when it is
// not, and the review asks again.
func (p *Prompter) editPlan(plan planexec.Plan) (planexec.Plan, bool, error) {
	var raw []byte
	if p.Editor != "" && !p.replayed {
		b, err := p.runEditor(plan)
		if err != nil {
			fmt.Fprintf(p.Out, "The editor failed (%v); type the plan as one line of JSON instead.\n", err)
		} else {
			raw = b
		}
	}
	if raw == nil {
		line, err := p.Line("Plan JSON (one line) > ")
		if err != nil {
			return planexec.Plan{}, false, err
		}
		raw = []byte(line)
	}
	edited, err := ParsePlan(raw)
	if err != nil {
		fmt.Fprintf(p.Out, "That plan was not taken: %v\n", err)
		return planexec.Plan{}, false, nil
	}
	return edited, true, nil
}

// runEditor opens the plan in p.Editor and returns the file as saved.
func (p *Prompter) runEditor(plan planexec.Plan) ([]byte, error) {
	f, err := os.CreateTemp("", "trellis-plan-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	b, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	words := strings.Fields(p.Editor)
	if len(words) == 0 {
		return nil, errors.New("the editor command is empty")
	}
	fmt.Fprintf(p.Out, "Opening the plan in %s; save and close it to continue.\n", words[0])
	cmd := exec.Command(words[0], append(words[1:], f.Name())...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if p.EditorIO != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, p.EditorIO, p.EditorIO
	}
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	return os.ReadFile(f.Name())
}

// ParsePlan reads an edited plan: JSON with only the plan schema's fields
// (an unknown field is an error naming it, never silently dropped), which
// must then pass planexec.Plan.Validate.
func ParsePlan(raw []byte) (planexec.Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var plan planexec.Plan
	if err := dec.Decode(&plan); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return plan, fmt.Errorf("it is not valid JSON (%v at byte %d)", se, se.Offset)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return plan, errors.New("it is not valid JSON (it ends too early)")
		}
		if msg := err.Error(); strings.Contains(msg, "unknown field") {
			return plan, fmt.Errorf("%s: a plan has task, steps (id, title, description, depends_on, done_when) and replan", strings.TrimPrefix(msg, "json: "))
		}
		return plan, fmt.Errorf("it does not fit the plan schema: %v", err)
	}
	if dec.More() {
		return plan, errors.New("there is more after the plan's JSON object")
	}
	if err := plan.Validate(); err != nil {
		return plan, err
	}
	return plan, nil
}

// seen reports whether plan is the one last printed.
func (v *PlanView) seen(plan planexec.Plan) bool {
	b, err := json.Marshal(plan)
	return err == nil && v.shown == string(b)
}

func (v *PlanView) remember(plan *planexec.Plan) {
	if b, err := json.Marshal(plan); err == nil {
		v.shown = string(b)
	}
}

// WritePlan prints a plan's steps with their dependencies.
func WritePlan(w io.Writer, plan planexec.Plan) {
	fmt.Fprintf(w, "  Task: %s\n", plan.Task)
	for _, s := range plan.Steps {
		deps := ""
		if len(s.DependsOn) > 0 {
			deps = " (after " + strings.Join(s.DependsOn, ", ") + ")"
		}
		mark := ""
		if slices.Contains(plan.Replan, s.ID) {
			mark = " [replan after]"
		}
		fmt.Fprintf(w, "  %s. %s%s%s\n", s.ID, s.Title, deps, mark)
	}
}

// PrintPlanEvents shows planexec's events: the plan, steps starting and
// ending, tool calls and results, and the delivered answer (streamed as
// it is written when the run streams graph.EventMessages).
func PrintPlanEvents(w io.Writer, ev graph.Event) { new(PlanView).Print(w, ev) }

// Print shows planexec's events, like PrintPlanEvents, remembering the
// plan it shows for Review.
func (v *PlanView) Print(w io.Writer, ev graph.Event) {
	if ev.Kind == graph.EventMessages {
		// The delivery's answer streams as the model writes it.
		if ev.Node == planexec.DeliverNode && ev.Namespace == "" && ev.Message.Part == graph.PartText {
			if v.streamed.Len() == 0 {
				fmt.Fprint(w, "\nDelivered:\n")
			}
			v.streamed.WriteString(ev.Message.Text)
			fmt.Fprint(w, ev.Message.Text)
		}
		return
	}
	e, ok := planexec.EventFrom(ev)
	if !ok {
		return
	}
	switch e.Kind {
	case planexec.EventPlanReady, planexec.EventReplanned:
		if e.Kind == planexec.EventReplanned {
			fmt.Fprintln(w, "\nThe plan was revised:")
		} else {
			fmt.Fprintln(w, "\nPlan ready:")
		}
		if e.Plan != nil {
			WritePlan(w, *e.Plan)
			v.remember(e.Plan)
		}
	case planexec.EventStepStarted:
		fmt.Fprintf(w, "\n> step %s: %s\n", e.StepID, e.Title)
	case planexec.EventToolCall:
		fmt.Fprintf(w, "    [%s] calls %s %s\n", e.StepID, e.Tool.Name, e.Tool.Arguments)
	case planexec.EventToolResult:
		mark := "->"
		if e.Tool.IsError {
			mark = "-> error:"
		}
		fmt.Fprintf(w, "    [%s] %s %s %s\n", e.StepID, e.Tool.Name, mark, firstLine(e.Tool.Result))
	case planexec.EventStepFinished:
		fmt.Fprintf(w, "  step %s done: %s\n", e.StepID, firstLine(e.Result))
	case planexec.EventStepFailed:
		fmt.Fprintf(w, "  step %s FAILED: %s\n", e.StepID, Plain(e.Error))
	case planexec.EventStepSkipped:
		fmt.Fprintf(w, "  step %s skipped: %s\n", e.StepID, e.Error)
	case planexec.EventStepChecked:
		again := ""
		if e.Result == "retry" {
			again = "; trying again"
		}
		fmt.Fprintf(w, "  step %s misses its goal: %s%s\n", e.StepID, e.Error, again)
	case planexec.EventDelivered:
		switch {
		case v.streamed.Len() == 0:
			fmt.Fprintf(w, "\nDelivered:\n%s\n", e.Text)
		case strings.TrimSpace(v.streamed.String()) == strings.TrimSpace(e.Text):
			fmt.Fprintln(w) // it streamed whole
		default: // what streamed is not the answer (a retried reply): show the answer
			fmt.Fprintf(w, "\n\nDelivered:\n%s\n", e.Text)
		}
		v.streamed.Reset()
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	if len(s) > 160 {
		return s[:160] + " ..."
	}
	return s
}

// Plain removes the engine's wrapping from an error message — the
// "graph: node … failed at step N (task …)" prefixes and task IDs — so a
// person reads what went wrong.
func Plain(msg string) string {
	msg = engineWrap.ReplaceAllString(msg, "")
	return taskID.ReplaceAllString(msg, "")
}

// engineWrap matches the prefix graph.NodeError puts before a node's error.
var engineWrap = regexp.MustCompile(`graph: node "[^"]*"(?: in subgraph "[^"]*")? failed at step \d+(?: \(task [0-9a-f]+\))?: `)

// taskID matches the engine's task hashes (and interrupt suffixes) left
// in a message.
var taskID = regexp.MustCompile(`\s*\(?(task )?[0-9a-f]{32}(:\d+)?\)?`)
