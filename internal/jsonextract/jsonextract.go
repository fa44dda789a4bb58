// Package jsonextract finds the JSON object inside an LLM reply.
//
// Models asked for "a JSON object" often wrap it in prose, put it in a
// ```json (or plain ```) fenced block, offer several candidates, or get cut
// off half way. Object picks the object a caller should decode and, when
// there is none, returns an error written to be shown back to the model in
// a correction message.
package jsonextract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxDepth is the deepest brace or bracket nesting Object will follow. It
// matches the limit encoding/json enforces, so anything deeper could not be
// decoded anyway.
const MaxDepth = 10_000

// ErrNoObject is wrapped by every error Object returns: no usable JSON
// object was found in the text. Test for it with errors.Is.
var ErrNoObject = errors.New("no JSON object found")

// extractError carries a message meant for the model and unwraps to
// ErrNoObject.
type extractError struct{ msg string }

func (e *extractError) Error() string { return e.msg }
func (e *extractError) Unwrap() error { return ErrNoObject }

func fail(format string, args ...any) error {
	return &extractError{msg: fmt.Sprintf(format, args...)}
}

// Object returns the first complete top-level JSON object in text, as raw
// JSON, trimmed. Order of preference: (1) the content of the first ```json
// (or ```JSON) fenced block that parses as an object; (2) the content of the
// first plain ``` fenced block that parses as an object; (3) the first
// balanced {...} span found by scanning the text (braces inside JSON strings,
// including escaped quotes \" and backslashes, do not count) that is valid
// JSON per json.Valid. If a balanced span is not valid JSON, keep scanning
// from the next '{' after its start.
//
// While scanning, a valid top-level JSON array ([...]) is skipped whole, so
// the first element of an array is never mistaken for the answer. Nesting
// deeper than MaxDepth is reported as an error. Every error wraps
// ErrNoObject and says what is wrong in terms a model can act on.
func Object(text string) (json.RawMessage, error) {
	return ObjectFunc(text, validJSON)
}

// ObjectFunc is Object with the test of validity given: valid must report
// whether a candidate (a trimmed span starting with '{') is valid JSON
// exactly as json.Valid does. It lets a caller that parses the object
// anyway check it in the same pass; the candidate whose test passes last
// is the one returned.
func ObjectFunc(text string, valid func(candidate string) bool) (json.RawMessage, error) {
	if obj, ok := fenced(text, true, valid); ok {
		return obj, nil
	}
	if obj, ok := fenced(text, false, valid); ok {
		return obj, nil
	}
	return scan(text, valid)
}

func validJSON(s string) bool { return json.Valid([]byte(s)) }

// fenced returns the trimmed content of the first fenced block whose info
// string is "json" (any case) when wantJSON is set, or empty otherwise, and
// whose content is a JSON object. Fences are paired in order: a block with
// any other info string (```python) is skipped whole.
func fenced(text string, wantJSON bool, valid func(string) bool) (json.RawMessage, bool) {
	const fence = "```"
	rest := text
	for {
		open := strings.Index(rest, fence)
		if open < 0 {
			return nil, false
		}
		rest = rest[open+len(fence):]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, false
		}
		info := strings.TrimSpace(rest[:nl])
		rest = rest[nl+1:]
		end := strings.Index(rest, fence)
		if end < 0 {
			return nil, false
		}
		body := strings.TrimSpace(rest[:end])
		rest = rest[end+len(fence):]
		match := info == ""
		if wantJSON {
			match = strings.EqualFold(info, "json")
		}
		if match && len(body) > 0 && body[0] == '{' && valid(body) {
			return json.RawMessage(body), true
		}
	}
}

// scanner finds matching closers for '{' and '[' positions, remembering
// every match it learns on the way so that no byte is rescanned from the
// same starting state.
type scanner struct {
	text  string
	ends  map[int]int // opener offset -> offset just past its closer, or -1 if never closed
	work  int         // bytes scanned or validated so far
	limit int         // give up beyond this much work
}

// errTooMuch aborts the search when the scanning budget is spent.
var errTooMuch = fail("the reply is too large and tangled to search for a JSON object; reply with only the JSON object")

// match returns the offset just past the closer matching the opener at p
// (text[p] is '{' or '['), or -1 if it is never closed. Only openers and
// closers of the same kind count, and none inside JSON strings.
func (s *scanner) match(p int) (int, error) {
	if end, ok := s.ends[p]; ok {
		return end, nil
	}
	openc, closec := s.text[p], byte('}')
	if openc == '[' {
		closec = ']'
	}
	stack := []int{p}
	inStr, esc := false, false
	for i := p + 1; i < len(s.text); i++ {
		c := s.text[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == openc:
			if len(stack) >= MaxDepth {
				return 0, fail("the reply nests braces or brackets more than %d levels deep (at byte offset %d); send a flatter JSON object", MaxDepth, i)
			}
			stack = append(stack, i)
		case c == closec:
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			s.ends[top] = i + 1
			if len(stack) == 0 {
				s.work += i + 1 - p
				return i + 1, nil
			}
		}
	}
	s.work += len(s.text) - p
	for _, o := range stack {
		s.ends[o] = -1
	}
	return -1, nil
}

// scan implements preference (3) of Object: the first balanced, valid
// {...} span, skipping valid top-level arrays.
func scan(text string, validObject func(string) bool) (json.RawMessage, error) {
	s := &scanner{text: text, ends: map[int]int{}, limit: 64*len(text) + 1<<20}
	unclosed, invalid, invalidEnd, array := -1, -1, 0, -1
	for p := 0; p < len(text); {
		i := strings.IndexAny(text[p:], "{[")
		if i < 0 {
			break
		}
		p += i
		end, err := s.match(p)
		if err != nil {
			return nil, err
		}
		if s.work > s.limit {
			return nil, errTooMuch
		}
		if end < 0 {
			if text[p] == '{' && unclosed < 0 {
				unclosed = p
			}
			p++
			continue
		}
		span := text[p:end]
		s.work += len(span)
		var valid bool
		if text[p] == '[' {
			valid = validJSON(span)
		} else {
			valid = validObject(span)
		}
		switch {
		case text[p] == '[' && valid:
			if array < 0 {
				array = p
			}
			p = end // skip the whole array
		case text[p] == '[':
			p++
		case valid:
			return json.RawMessage(span), nil
		default:
			if invalid < 0 {
				invalid, invalidEnd = p, end
			}
			p++
		}
	}
	switch {
	case unclosed >= 0:
		return nil, fail("the reply's JSON object is not complete: the '{' at byte offset %d is never closed (was the reply cut off?); send the whole object", unclosed)
	case invalid >= 0:
		return nil, invalidError(text, invalid, invalidEnd)
	case array >= 0:
		return nil, fail("no JSON object found in the reply: it contains a JSON array at byte offset %d, but a JSON object {...} is required", array)
	default:
		return nil, fail("no JSON object found in the reply: it contains no '{'; reply with a JSON object")
	}
}

// invalidError describes why text[start:end], a balanced {...} span, is
// not valid JSON.
func invalidError(text string, start, end int) error {
	span := text[start:end]
	var raw json.RawMessage
	why := "invalid JSON"
	if err := json.Unmarshal([]byte(span), &raw); err != nil {
		why = err.Error()
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 {
			why += fmt.Sprintf(" (near byte offset %d of the reply)", start+int(se.Offset)-1)
		}
	}
	excerpt := span
	if len(excerpt) > 40 {
		excerpt = excerpt[:40] + "..."
	}
	return fail("found {...} at byte offset %d (starting %s) but it is not valid JSON: %s", start, strconv.Quote(excerpt), why)
}
