package eval

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// compiledAnswer is an Answer with its question pattern compiled.
type compiledAnswer struct {
	Answer
	re *regexp.Regexp
}

func (a Answer) compile() (compiledAnswer, error) {
	c := compiledAnswer{Answer: a}
	if a.Question != "" {
		re, err := regexp.Compile(a.Question)
		if err != nil {
			return c, fmt.Errorf("question pattern: %w", err)
		}
		c.re = re
	}
	return c, nil
}

func (a compiledAnswer) ruleless() bool { return a.Kind == "" && a.Question == "" && a.Node == "" }

func (a compiledAnswer) matches(in Interrupt) bool {
	return (a.Kind == "" || a.Kind == in.Kind) &&
		(a.Node == "" || a.Node == in.Node) &&
		(a.re == nil || a.re.MatchString(in.Question))
}

// answerer hands out the answers of one phase (the input's, or a turn's)
// by Answer's rules.
type answerer struct {
	answers []compiledAnswer
	used    []bool
}

func newAnswerer(as []Answer) (*answerer, error) {
	a := &answerer{used: make([]bool, len(as))}
	for i, x := range as {
		c, err := x.compile()
		if err != nil {
			return nil, fmt.Errorf("answer %d: %w", i+1, err)
		}
		a.answers = append(a.answers, c)
	}
	return a, nil
}

// answer returns the value for in, or false when no answer applies. An
// answer with rules takes precedence only by order: answers are tried in
// their order, and the first that applies wins.
func (a *answerer) answer(in Interrupt) (json.RawMessage, bool) {
	for i, c := range a.answers {
		if a.used[i] && !c.Repeat {
			continue
		}
		if c.ruleless() || c.matches(in) {
			a.used[i] = true
			return c.Value, true
		}
	}
	return nil, false
}

// interruptFields fills an Interrupt's Kind and Question from its payload:
// Kind from "kind", Question from the first of "question", "message",
// "title", "prompt" and "text" that is a string, or the payload itself
// when it is a string.
func interruptFields(in *Interrupt) {
	if len(in.Payload) == 0 {
		return
	}
	var s string
	if json.Unmarshal(in.Payload, &s) == nil {
		if in.Question == "" {
			in.Question = s
		}
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(in.Payload, &obj) != nil {
		return
	}
	if in.Kind == "" {
		_ = json.Unmarshal(obj["kind"], &in.Kind)
	}
	if in.Question != "" {
		return
	}
	for _, k := range []string{"question", "message", "title", "prompt", "text"} {
		if json.Unmarshal(obj[k], &s) == nil && s != "" {
			in.Question = s
			return
		}
	}
}
