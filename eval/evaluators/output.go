package evaluators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/internal/jsonextract"
	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

// evaluator adapts a function to eval.Evaluator.
type evaluator struct {
	name string
	fn   func(ctx context.Context, t eval.Trial) (eval.Score, error)
}

func (e *evaluator) Name() string { return e.name }

func (e *evaluator) Evaluate(ctx context.Context, t eval.Trial) (eval.Score, error) {
	if err := checkTrial(t); err != nil {
		return eval.Score{}, fmt.Errorf("%s: %w", e.name, err)
	}
	return e.fn(ctx, t)
}

// ExactParams configure "exact": the final output equals a reference.
type ExactParams struct {
	// Value is the reference; without it, the case's Expect.Output.
	Value *string `json:"value,omitempty"`
	// IgnoreCase compares case-insensitively (Unicode simple folding).
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// NoTrim keeps leading and trailing white space significant.
	NoTrim bool `json:"no_trim,omitempty"`
}

func newExact(params json.RawMessage) (eval.Evaluator, error) {
	var p ExactParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	return &evaluator{name: "exact", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		got := finalOutput(t.Thread)
		want, isString, ok := "", true, false
		if p.Value != nil {
			want, ok = *p.Value, true
		} else {
			want, isString, ok = referenceText(t.Case.Expect.Output)
		}
		if !ok {
			return eval.Score{Explanation: "the case has no expected output (expect.output) and the criterion no value"}, nil
		}
		if !isString {
			// A structured reference compares as JSON, by value.
			w, errW := jsonmatch.Decode([]byte(want))
			g, errG := jsonmatch.Decode([]byte(strings.TrimSpace(got)))
			if errW == nil && errG == nil && jsonmatch.Equal(w, g) {
				return eval.Score{Value: 1, Explanation: "the output equals the expected JSON"}, nil
			}
			return eval.Score{Explanation: fmt.Sprintf("the output %q is not the expected JSON %s", clip(got, 120), clip(want, 120))}, nil
		}
		a, b := got, want
		if !p.NoTrim {
			a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		}
		equal := a == b
		if p.IgnoreCase {
			equal = strings.EqualFold(a, b)
		}
		if equal {
			return eval.Score{Value: 1, Explanation: "the output equals the expected text"}, nil
		}
		return eval.Score{Explanation: fmt.Sprintf("the output %q differs from the expected %q", clip(got, 120), clip(want, 120))}, nil
	}}, nil
}

// ContainsParams configure "contains": substrings that must, or must not,
// appear in the final output.
type ContainsParams struct {
	// Values must appear; without Values and Absent, the case's
	// Expect.Output text must.
	Values []string `json:"values,omitempty"`
	// Any makes one of Values enough.
	Any bool `json:"any,omitempty"`
	// Absent must not appear.
	Absent []string `json:"absent,omitempty"`
	// IgnoreCase compares case-insensitively.
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

func newContains(params json.RawMessage) (eval.Evaluator, error) {
	var p ContainsParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	for _, v := range append(append([]string(nil), p.Values...), p.Absent...) {
		if v == "" {
			return nil, errors.New("contains: an empty string in values or absent matches everything")
		}
	}
	return &evaluator{name: "contains", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		values := p.Values
		if len(values) == 0 && len(p.Absent) == 0 {
			want, _, ok := referenceText(t.Case.Expect.Output)
			if !ok || want == "" {
				return eval.Score{Explanation: "nothing to look for: no values, no absent, no expect.output"}, nil
			}
			values = []string{want}
		}
		got := finalOutput(t.Thread)
		fold := func(s string) string {
			if p.IgnoreCase {
				return strings.ToLower(s)
			}
			return s
		}
		g := fold(got)
		var missing, present []string
		found := 0
		for _, v := range values {
			if strings.Contains(g, fold(v)) {
				found++
			} else {
				missing = append(missing, v)
			}
		}
		for _, v := range p.Absent {
			if strings.Contains(g, fold(v)) {
				present = append(present, v)
			}
		}
		checks, passed := 0, 0
		if len(values) > 0 {
			if p.Any {
				checks++
				if found > 0 {
					passed++
					missing = nil
				}
			} else {
				checks += len(values)
				passed += found
			}
		}
		checks += len(p.Absent)
		passed += len(p.Absent) - len(present)
		var why []string
		if len(missing) > 0 {
			what := "missing"
			if p.Any {
				what = "none of"
			}
			why = append(why, fmt.Sprintf("%s %q", what, missing))
		}
		if len(present) > 0 {
			why = append(why, fmt.Sprintf("must not contain %q", present))
		}
		s := eval.Score{Value: float64(passed) / float64(checks)}
		if len(why) == 0 {
			s.Explanation = "every check passed"
		} else {
			s.Explanation = "the output " + strings.Join(why, "; ")
		}
		return s, nil
	}}, nil
}

// RegexParams configure "regex": a Go regular expression (RE2) matched
// against the final output.
type RegexParams struct {
	// Pattern is required; use (?i) for case-insensitive and (?s) to let
	// "." match newlines.
	Pattern string `json:"pattern"`
	// Absent inverts the check: the pattern must not match.
	Absent bool `json:"absent,omitempty"`
}

func newRegex(params json.RawMessage) (eval.Evaluator, error) {
	var p RegexParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Pattern == "" {
		return nil, errors.New("regex: params.pattern is required")
	}
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return nil, fmt.Errorf("regex: %w", err)
	}
	return &evaluator{name: "regex", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		got := finalOutput(t.Thread)
		m := re.MatchString(got)
		switch {
		case m && !p.Absent:
			return eval.Score{Value: 1, Explanation: fmt.Sprintf("the output matches %s", p.Pattern)}, nil
		case !m && p.Absent:
			return eval.Score{Value: 1, Explanation: fmt.Sprintf("the output does not match %s", p.Pattern)}, nil
		case m:
			return eval.Score{Explanation: fmt.Sprintf("the output matches %s, which it must not (%q)", p.Pattern, re.FindString(got))}, nil
		default:
			return eval.Score{Explanation: fmt.Sprintf("the output %q does not match %s", clip(got, 120), p.Pattern)}, nil
		}
	}}, nil
}

// subjectJSON is the JSON a json_* evaluator checks, and what to call it:
// a state key's value when key is set, else the final output — the whole
// text, or the first JSON object in it (fenced or inline).
func subjectJSON(th *eval.Thread, key string) (what string, raw json.RawMessage, err error) {
	if key != "" {
		v, ok := th.State[key]
		if !ok {
			return "", nil, fmt.Errorf("the final state has no key %q", key)
		}
		return fmt.Sprintf("the state's %q", key), v, nil
	}
	got := strings.TrimSpace(finalOutput(th))
	if json.Valid([]byte(got)) {
		return "the output's JSON", json.RawMessage(got), nil
	}
	obj, err := jsonextract.Object(got)
	if err != nil {
		return "", nil, fmt.Errorf("the output holds no JSON: %w", err)
	}
	return "the output's JSON", obj, nil
}

// JSONSchemaParams configure "json_schema": the output's JSON validates
// against a JSON Schema (draft 2020-12).
type JSONSchemaParams struct {
	// Schema is required.
	Schema json.RawMessage `json:"schema"`
	// State, when set, checks that key of the final state instead of the
	// final output.
	State string `json:"state,omitempty"`
}

func newJSONSchema(params json.RawMessage) (eval.Evaluator, error) {
	var p JSONSchemaParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if len(p.Schema) == 0 {
		return nil, errors.New("json_schema: params.schema is required")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(p.Schema, &s); err != nil {
		return nil, fmt.Errorf("json_schema: schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("json_schema: schema: %w", err)
	}
	return &evaluator{name: "json_schema", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		what, raw, err := subjectJSON(t.Thread, p.State)
		if err != nil {
			return eval.Score{Explanation: err.Error()}, nil
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return eval.Score{}, fmt.Errorf("json_schema: %s: %w", what, err)
		}
		if err := rs.Validate(v); err != nil {
			return eval.Score{Explanation: what + " does not match the schema: " + err.Error()}, nil
		}
		return eval.Score{Value: 1, Explanation: what + " matches the schema"}, nil
	}}, nil
}

// JSONSubsetParams configure "json_subset": every field of a reference
// object is in the output's JSON with the same value.
type JSONSubsetParams struct {
	// Value is the reference; without it, the case's Expect.Output.
	Value json.RawMessage `json:"value,omitempty"`
	// State, when set, checks that key of the final state instead of the
	// final output.
	State string `json:"state,omitempty"`
}

func newJSONSubset(params json.RawMessage) (eval.Evaluator, error) {
	var p JSONSubsetParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	var fixed any
	if len(p.Value) > 0 {
		v, err := jsonmatch.Decode(p.Value)
		if err != nil {
			return nil, fmt.Errorf("json_subset: value: %w", err)
		}
		fixed = v
	}
	return &evaluator{name: "json_subset", fn: func(_ context.Context, t eval.Trial) (eval.Score, error) {
		want := fixed
		if want == nil {
			if len(t.Case.Expect.Output) == 0 {
				return eval.Score{Explanation: "the case has no expected output (expect.output) and the criterion no value"}, nil
			}
			v, err := jsonmatch.Decode(t.Case.Expect.Output)
			if err != nil {
				return eval.Score{}, fmt.Errorf("json_subset: expect.output: %w", err)
			}
			want = v
		}
		what, raw, err := subjectJSON(t.Thread, p.State)
		if err != nil {
			return eval.Score{Explanation: err.Error()}, nil
		}
		g, err := jsonmatch.Decode(raw)
		if err != nil {
			return eval.Score{}, fmt.Errorf("json_subset: %s: %w", what, err)
		}
		if ok, where := jsonSubset(want, g, ""); !ok {
			return eval.Score{Explanation: what + " does not contain the expected value: " + where}, nil
		}
		return eval.Score{Value: 1, Explanation: what + " contains the expected value"}, nil
	}}, nil
}
