package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Validator is implemented by tools that check their own arguments. The
// tool node calls it before asking for approval and before running the
// tool, and on arguments a person edited, after making sure they are a JSON
// object. Return an *ArgumentError (see BadArguments) saying what is wrong;
// any other error is treated as one. Tools without it are checked against
// Info.Parameters.
type Validator interface {
	ValidateArguments(args json.RawMessage) error
}

// Summarizer is implemented by tools that describe a call in a sentence for
// the person asked to approve it. The arguments have been validated. Tools
// without it are summarized as their name and arguments.
type Summarizer interface {
	Summarize(args json.RawMessage) string
}

// FuncOption configures a tool made by Func.
type FuncOption interface{ applyFunc(*funcConfig) }

type funcConfig struct {
	readOnly bool
	summary  any // func(Args) string, checked against Args in Func
}

type funcOption func(*funcConfig)

func (f funcOption) applyFunc(c *funcConfig) { f(c) }

// ReadOnly marks the tool as a read tool: it changes nothing outside the
// run, so the tool node runs it at once unless the approval policy names
// it (see Info.ReadOnly).
func ReadOnly() FuncOption { return funcOption(func(c *funcConfig) { c.readOnly = true }) }

// Summary sets how a call is described to the person asked to approve it,
// for example "Send an email to ann@example.com". Args must be the tool's
// arguments type; Func reports a mismatch.
func Summary[Args any](fn func(args Args) string) FuncOption {
	return funcOption(func(c *funcConfig) { c.summary = fn })
}

// Func makes a tool from a typed function.
//
// The parameters schema is inferred from Args, which must be a struct (or a
// map with string keys): each exported field is a parameter named by its
// json tag; fields tagged omitempty or omitzero are optional, the others
// required; unknown fields are refused; a `jsonschema:"..."` tag describes
// the field to the model. Schemas are inferred once per type.
//
// On a call, the arguments are checked against the schema and decoded into
// Args; any problem is an *ArgumentError that tells the model which field is
// wrong and how, and fn is not called. fn's result is given to the model as
// is when it is a string and JSON-encoded otherwise. fn's error becomes a
// tool error message (see Tool).
//
// Func returns an error for a name models cannot call (use letters,
// digits, '_' and '-', at most 64), a nil fn, an Args type that is not a
// JSON object, or an option that does not fit Args.
func Func[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error), opts ...FuncOption) (Tool, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: the function is nil", name)
	}
	var cfg funcConfig
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("tool %q: an option is nil", name)
		}
		o.applyFunc(&cfg)
	}
	s, err := schemaFor(reflect.TypeFor[Args]())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	t := &funcTool[Args, Result]{
		info:   Info{Name: name, Description: description, Parameters: s.raw, ReadOnly: cfg.readOnly},
		schema: s,
		fn:     fn,
	}
	if cfg.summary != nil {
		sum, ok := cfg.summary.(func(Args) string)
		if !ok {
			return nil, fmt.Errorf("tool %q: the Summary option's function is %T, but the tool's arguments are %v; make it a func(%v) string",
				name, cfg.summary, reflect.TypeFor[Args](), reflect.TypeFor[Args]())
		}
		if sum == nil {
			return nil, fmt.Errorf("tool %q: the Summary option's function is nil", name)
		}
		t.summary = sum
	}
	return t, nil
}

// MustFunc is Func that panics on error, for tools declared as package
// variables, where the error is a programming mistake found at start-up.
func MustFunc[Args, Result any](name, description string, fn func(ctx context.Context, args Args) (Result, error), opts ...FuncOption) Tool {
	t, err := Func(name, description, fn, opts...)
	if err != nil {
		panic("tool.MustFunc: " + err.Error())
	}
	return t
}

type funcTool[Args, Result any] struct {
	info    Info
	schema  *schema
	fn      func(context.Context, Args) (Result, error)
	summary func(Args) string
}

func (t *funcTool[Args, Result]) Info() Info { return t.info }

func (t *funcTool[Args, Result]) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	args, err := t.decode(raw)
	if err != nil {
		return "", err
	}
	res, err := t.fn(ctx, args)
	if err != nil {
		return "", err
	}
	if s, ok := any(res).(string); ok {
		return s, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("tool %q: encode the result as JSON: %w", t.info.Name, err)
	}
	return string(b), nil
}

func (t *funcTool[Args, Result]) checksOwnArguments() {}

func (t *funcTool[Args, Result]) ValidateArguments(raw json.RawMessage) error {
	_, err := t.decode(raw)
	return err
}

func (t *funcTool[Args, Result]) Summarize(raw json.RawMessage) string {
	if t.summary == nil {
		return defaultSummary(t.info.Name, raw)
	}
	args, err := t.decode(raw)
	if err != nil {
		return defaultSummary(t.info.Name, raw)
	}
	return t.summary(args)
}

func (t *funcTool[Args, Result]) decode(raw json.RawMessage) (Args, error) {
	var args Args
	raw = normalizeArgs(raw)
	if err := t.schema.check(t.info.Name, raw); err != nil {
		return args, err
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return args, &ArgumentError{Tool: t.info.Name, Problem: decodeProblem(err), Err: err}
	}
	return args, nil
}

// decodeProblem phrases an error decoding valid arguments into Go values
// (a number too large for its field, say).
func decodeProblem(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return fmt.Sprintf("%q: the value (%s) is out of range", te.Field, te.Value)
	}
	return err.Error()
}

// checkName reports a tool name providers would refuse.
func checkName(name string) error {
	if name == "" {
		return errors.New("a tool has an empty name")
	}
	if len(name) > 64 {
		return fmt.Errorf("tool name %q is %d characters long; providers accept at most 64", name, len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("tool name %q contains %q; use only letters, digits, '_' and '-'", name, r)
		}
	}
	return nil
}

// defaultSummary describes a call as its name and compact arguments.
func defaultSummary(name string, raw json.RawMessage) string {
	args := string(normalizeArgs(raw))
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		args = compactJSON(v)
	}
	return fmt.Sprintf("Call %s with %s", name, clip(args, 300))
}
