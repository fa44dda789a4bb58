package planexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/answer"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// AskToolName is the name of the built-in tool the planner and the steps
// call to ask a person a question (with AskMode).
const AskToolName = "ask_user"

// AskKind is the Kind of every Ask, so code reading a run's interrupts can
// tell questions from plan reviews and tool approvals.
const AskKind = "planexec_ask"

// AskMode is how a question is answered.
type AskMode string

// The ask modes.
const (
	AskText   AskMode = "text"   // free text
	AskSelect AskMode = "select" // one of Options
	AskForm   AskMode = "form"   // a value for each of Fields
)

// JSONSchema limits the mode to the known ones (see llm.SchemaProvider).
func (AskMode) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{string(AskText), string(AskSelect), string(AskForm)}}
}

// FieldType is the type of a form field's value.
type FieldType string

// The form field types.
const (
	FieldText    FieldType = "text"    // a string; Min and Max bound its length
	FieldNumber  FieldType = "number"  // a number; Min and Max bound it
	FieldSelect  FieldType = "select"  // one of Options
	FieldBoolean FieldType = "boolean" // true or false
)

// JSONSchema limits the type to the known ones (see llm.SchemaProvider).
func (FieldType) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{string(FieldText), string(FieldNumber), string(FieldSelect), string(FieldBoolean)}}
}

// Field is one field of a form question.
type Field struct {
	// Key names the value in the answer's Values.
	Key   string    `json:"key" jsonschema:"the name of the value in the answer"`
	Label string    `json:"label" jsonschema:"what the person sees"`
	Type  FieldType `json:"type"`
	// Required fields must be answered.
	Required bool `json:"required,omitempty"`
	// Min and Max bound a number, or the length of a text.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Options are the choices of a select field.
	Options []string `json:"options,omitempty"`
}

// Ask is the payload of the interrupt raised when the agent asks a person
// a question (graph.InterruptInfo.Payload, as JSON; decode it with
// AskFrom). Answer it with an AskAnswer.
type Ask struct {
	// Kind is AskKind.
	Kind     string   `json:"kind"`
	Mode     AskMode  `json:"mode"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
	Fields   []Field  `json:"fields,omitempty"`
	// Step is the ID of the step asking; empty while planning.
	Step string `json:"step,omitempty"`
	// Problems, when set, say why the person is asked again: the previous
	// answer did not fit the question.
	Problems []string `json:"problems,omitempty"`
}

// AskAnswer answers an Ask: Text for a text question, Choice (one of the
// options) for a select question, Values (by field key) for a form. Build
// one with TextAnswer, ChoiceAnswer or FormAnswer.
type AskAnswer struct {
	Text   string         `json:"text,omitempty"`
	Choice string         `json:"choice,omitempty"`
	Values map[string]any `json:"values,omitempty"`
}

// UnmarshalJSON reads an answer as a person may give it: the object form
// {"text"|"choice"|"values"}, or plainly — a string (the text, or the
// option chosen), a number or boolean (its text), or an object of form
// values keyed by field.
func (a *AskAnswer) UnmarshalJSON(b []byte) error {
	if s, ok := answer.String(b); ok {
		*a = AskAnswer{Text: s}
		return nil
	}
	if answer.Object(b) {
		if answer.HasKey(b, "text", "choice", "values") {
			type object AskAnswer
			var o object
			if err := json.Unmarshal(b, &o); err != nil {
				return fmt.Errorf("planexec: an answer object {text, choice, values}: %w", err)
			}
			*a = AskAnswer(o)
			return nil
		}
		var values map[string]any
		if err := json.Unmarshal(b, &values); err != nil {
			return fmt.Errorf("planexec: form values: %w", err)
		}
		*a = AskAnswer{Values: values}
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("planexec: an answer: %w", err)
	}
	switch v.(type) {
	case bool, float64:
		*a = AskAnswer{Text: string(bytes.TrimSpace(b))}
		return nil
	}
	return fmt.Errorf("planexec: an answer is text, an option, form values or {text, choice, values}; got %s", bytes.TrimSpace(b))
}

// TextAnswer answers a text question.
func TextAnswer(text string) AskAnswer { return AskAnswer{Text: text} }

// ChoiceAnswer answers a select question with one of its options.
func ChoiceAnswer(option string) AskAnswer { return AskAnswer{Choice: option} }

// FormAnswer answers a form with a value per field key.
func FormAnswer(values map[string]any) AskAnswer { return AskAnswer{Values: values} }

// AskFrom decodes the question an interrupt carries. It reports false for
// interrupts that are not questions from this agent.
func AskFrom(in graph.InterruptInfo) (Ask, bool) {
	var a Ask
	if json.Unmarshal(in.Payload, &a) != nil || a.Kind != AskKind {
		return Ask{}, false
	}
	return a, true
}

// askArgs are the ask tool's arguments, as the model writes them.
type askArgs struct {
	Mode     AskMode  `json:"mode"`
	Question string   `json:"question" jsonschema:"the question, in words the person understands"`
	Options  []string `json:"options,omitempty" jsonschema:"for select: the choices"`
	Fields   []Field  `json:"fields,omitempty" jsonschema:"for form: the fields to fill in"`
}

// parseAsk decodes and checks the ask tool's arguments, returning the
// question to put to a person, or the problems for the model.
func parseAsk(raw string) (Ask, []string) {
	args, err := llm.Decode[askArgs](raw)
	if err != nil {
		var probs []string
		if de, ok := errors.AsType[*llm.DecodeError](err); ok {
			for _, p := range de.Problems {
				probs = append(probs, p.Message)
			}
		} else {
			probs = append(probs, err.Error())
		}
		return Ask{}, probs
	}
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if strings.TrimSpace(args.Question) == "" {
		add("the question is empty")
	}
	switch args.Mode {
	case AskSelect:
		if len(args.Options) < 2 {
			add("a select question needs at least two options")
		}
		if dupOrEmpty(args.Options) {
			add("the options must be non-empty and different from each other")
		}
	case AskForm:
		if len(args.Fields) == 0 {
			add("a form needs at least one field")
		}
		keys := map[string]bool{}
		for i := range args.Fields {
			f := &args.Fields[i]
			if strings.TrimSpace(f.Key) == "" {
				add("field %d has no key", i+1)
				continue
			}
			if keys[f.Key] {
				add("two fields have the key %q", f.Key)
			}
			keys[f.Key] = true
			if f.Label == "" {
				f.Label = f.Key
			}
			if f.Type == FieldSelect && (len(f.Options) == 0 || dupOrEmpty(f.Options)) {
				add("select field %q needs options, non-empty and different from each other", f.Key)
			}
			if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
				add("field %q has min %v above max %v", f.Key, *f.Min, *f.Max)
			}
		}
	}
	if len(probs) > 0 {
		return Ask{}, probs
	}
	a := Ask{Kind: AskKind, Mode: args.Mode, Question: args.Question}
	switch args.Mode {
	case AskSelect:
		a.Options = args.Options
	case AskForm:
		a.Fields = args.Fields
	}
	return a, nil
}

func dupOrEmpty(opts []string) bool {
	seen := map[string]bool{}
	for _, o := range opts {
		if strings.TrimSpace(o) == "" || seen[o] {
			return true
		}
		seen[o] = true
	}
	return false
}

// Check reports whether ans answers a: the text the model is given (the
// text, the choice, or the form's values as a JSON object) or the
// problems to show the person.
func (a Ask) Check(ans AskAnswer) (string, []string) {
	switch a.Mode {
	case AskSelect:
		choice := cmpOr(ans.Choice, ans.Text)
		for _, o := range a.Options {
			if strings.EqualFold(strings.TrimSpace(choice), o) {
				return o, nil
			}
		}
		return "", []string{fmt.Sprintf("choose one of the options (%s); %q is not one of them", strings.Join(a.Options, ", "), choice)}
	case AskForm:
		return a.checkForm(ans.Values)
	}
	text := strings.TrimSpace(cmpOr(ans.Text, ans.Choice))
	if text == "" {
		return "", []string{"the answer is empty"}
	}
	return text, nil
}

func (a Ask) checkForm(values map[string]any) (string, []string) {
	var probs []string
	out := make(map[string]any, len(a.Fields))
	known := map[string]bool{}
	for _, f := range a.Fields {
		known[f.Key] = true
		v, ok := values[f.Key]
		if !ok || v == nil || v == "" {
			if f.Required {
				probs = append(probs, fmt.Sprintf("%s is required", f.Label))
			}
			continue
		}
		nv, prob := f.check(v)
		if prob != "" {
			probs = append(probs, prob)
			continue
		}
		out[f.Key] = nv
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !known[k] {
			probs = append(probs, fmt.Sprintf("%q is not a field of this form", k))
		}
	}
	if len(probs) > 0 {
		return "", probs
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", []string{"the values cannot be encoded as JSON: " + err.Error()}
	}
	return string(b), nil
}

// check validates one value and returns it normalized (numbers given as
// text become numbers), or the problem.
func (f Field) check(v any) (any, string) {
	switch f.Type {
	case FieldNumber:
		var n float64
		switch x := v.(type) {
		case float64:
			n = x
		case string:
			p, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil || math.IsNaN(p) || math.IsInf(p, 0) {
				return nil, fmt.Sprintf("%s must be a number; %q is not", f.Label, x)
			}
			n = p
		default:
			return nil, fmt.Sprintf("%s must be a number", f.Label)
		}
		if f.Min != nil && n < *f.Min {
			return nil, fmt.Sprintf("%s must be at least %v", f.Label, *f.Min)
		}
		if f.Max != nil && n > *f.Max {
			return nil, fmt.Sprintf("%s must be at most %v", f.Label, *f.Max)
		}
		return n, ""
	case FieldBoolean:
		switch x := v.(type) {
		case bool:
			return x, ""
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
				return b, ""
			}
		}
		return nil, fmt.Sprintf("%s must be true or false", f.Label)
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Sprintf("%s must be text", f.Label)
	}
	if f.Type == FieldSelect {
		for _, o := range f.Options {
			if strings.EqualFold(strings.TrimSpace(s), o) {
				return o, ""
			}
		}
		return nil, fmt.Sprintf("%s must be one of %s", f.Label, strings.Join(f.Options, ", "))
	}
	n := float64(len([]rune(s)))
	if f.Min != nil && n < *f.Min {
		return nil, fmt.Sprintf("%s must be at least %v characters long", f.Label, *f.Min)
	}
	if f.Max != nil && n > *f.Max {
		return nil, fmt.Sprintf("%s must be at most %v characters long", f.Label, *f.Max)
	}
	return s, ""
}

// AnswerSchema is the JSON Schema of the answers that fit a, plain or as
// an AskAnswer object: the text of a text question, one of the options of
// a select question, or the form's values with their types, bounds and
// required fields. Its
// interrupt carries it (graph.InterruptInfo.Schema) for clients to show
// and check.
func (a Ask) AnswerSchema() json.RawMessage {
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}
	var schema map[string]any
	switch a.Mode {
	case AskSelect:
		schema = map[string]any{"anyOf": []any{
			map[string]any{"type": "string", "enum": a.Options},
			obj(map[string]any{"choice": map[string]any{"type": "string", "enum": a.Options}}, "choice"),
		}}
	case AskForm:
		props := map[string]any{}
		var required []string
		for _, f := range a.Fields {
			p := map[string]any{"title": f.Label}
			switch f.Type {
			case FieldNumber:
				p["type"] = "number"
				if f.Min != nil {
					p["minimum"] = *f.Min
				}
				if f.Max != nil {
					p["maximum"] = *f.Max
				}
			case FieldBoolean:
				p["type"] = "boolean"
			case FieldSelect:
				p["type"], p["enum"] = "string", f.Options
			default:
				p["type"] = "string"
				if f.Min != nil {
					p["minLength"] = int(*f.Min)
				}
				if f.Max != nil {
					p["maxLength"] = int(*f.Max)
				}
			}
			props[f.Key] = p
			if f.Required {
				required = append(required, f.Key)
			}
		}
		form := obj(props, required...)
		schema = map[string]any{"anyOf": []any{form, obj(map[string]any{"values": form}, "values")}}
	default:
		text := map[string]any{"type": "string", "minLength": 1}
		schema = map[string]any{"anyOf": []any{text, obj(map[string]any{"text": text}, "text")}}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil // maps of strings and numbers always encode
	}
	return b
}

// askPerson puts a to a person through graph interrupts until the answer
// fits, asking again (a new interrupt, with the problems) when it does
// not. It returns the answer's text for the model.
func askPerson(ctx context.Context, a Ask) (string, error) {
	for {
		ans, err := graph.Interrupt[AskAnswer](ctx, a, graph.ExpectAnswer(a.AnswerSchema()))
		if err != nil {
			return "", err
		}
		text, probs := a.Check(ans)
		if len(probs) == 0 {
			return text, nil
		}
		a.Problems = probs
	}
}

// askTool is the ask_user tool offered to steps (and its spec, to the
// planner). It is a read tool: it changes nothing, so it needs no
// approval; the question itself is the interrupt.
type askTool struct{ info tool.Info }

func newAskTool() *askTool {
	schema, err := llm.SchemaFor[askArgs]()
	if err != nil {
		panic("planexec: the ask tool's schema: " + err.Error()) // a fixed type: a bug, found by every test
	}
	return &askTool{info: tool.Info{
		Name: AskToolName,
		Description: "Ask the user a question when you need information only they can give. " +
			"mode text: a free answer; select: one of options; form: fields, each with key, label, type " +
			"(text, number, select, boolean), required, min/max, options. Ask only what you cannot find out or assume.",
		Parameters: schema,
		ReadOnly:   true,
	}}
}

func (t *askTool) Info() tool.Info { return t.info }

// ValidateArguments lets the tool node send a bad question back to the
// model before anyone is asked.
func (t *askTool) ValidateArguments(raw json.RawMessage) error {
	if _, probs := parseAsk(string(raw)); len(probs) > 0 {
		return tool.BadArguments(AskToolName, "%s", strings.Join(probs, "; "))
	}
	return nil
}

func (t *askTool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, probs := parseAsk(string(raw))
	if len(probs) > 0 {
		return "", tool.BadArguments(AskToolName, "%s", strings.Join(probs, "; "))
	}
	a.Step = stepFrom(ctx)
	text, err := askPerson(ctx, a)
	if err != nil && a.Step == "" {
		emitWaiting(ctx, "", err) // a task run without a plan; in a step, the step node reports the wait
	}
	return text, err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
