package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/internal/jsonextract"
)

// Decode reads a T from a model's reply.
//
// It finds the JSON in the reply, checks it against T's schema (see
// SchemaFor) and unmarshals it. When T is an object type (a struct, a map,
// a pointer to one, an interface), the object is found as
// internal/jsonextract does it, whatever prose surrounds it; when several
// objects are present, the first one wins, in this order of preference:
//
//  1. the first ```json fenced block holding an object;
//  2. the first bare ``` fenced block holding an object;
//  3. the first balanced {...} in the text that is valid JSON (braces
//     inside JSON strings do not count; a top-level array is skipped whole).
//
// Other types (slices, strings, numbers) are read from the first fenced
// block holding valid JSON, the whole reply, or, for arrays, the first
// '[' that starts a valid array.
//
// Integers must be written as integers (3, not 3.0 or 3e0), as
// encoding/json requires for Go integer fields; jsonschema-go alone would
// accept 3.0.
//
// On failure the error is a *DecodeError listing every problem found, each
// worded so that a model can fix it. A type for which no schema can be
// inferred is reported with a plain error.
func Decode[T any](reply string) (T, error) {
	var v T
	c, err := contractFor(reflect.TypeFor[T]())
	if err != nil {
		return v, err
	}
	if derr := c.decode(reply, &v); derr != nil {
		var zero T
		return zero, derr
	}
	return v, nil
}

// Problem is one thing wrong with a reply.
type Problem struct {
	// Path locates the offending value in the JSON, as steps[2].id or
	// labels["a b"]; empty for the reply or JSON value as a whole.
	Path string
	// Message says what is wrong and what is expected, in plain words for
	// the model, naming the path: "field `steps[2].id` is required".
	Message string
}

// String returns the message.
func (p Problem) String() string { return p.Message }

// DecodeError reports a reply that does not hold a valid T.
type DecodeError struct {
	// Reply is the reply as received.
	Reply string
	// Problems lists what is wrong, in the order found (at least one).
	Problems []Problem

	object bool   // T is read from a JSON object
	shape  string // T's expected shape, for Correction
}

// Error lists the problems on one line.
func (e *DecodeError) Error() string {
	return "llm: the reply does not hold the expected JSON: " + e.problemList("; ")
}

func (e *DecodeError) problemList(sep string) string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, sep)
}

// Correction returns the text GenerateJSON sends back to the model by
// default: the problems, one per line, and the expected shape of the JSON,
// with the instruction to reply with the JSON alone.
func (e *DecodeError) Correction() string {
	what := "JSON value"
	if e.object {
		what = "JSON object"
	}
	var b strings.Builder
	b.WriteString("Your reply could not be used:\n- ")
	b.WriteString(e.problemList("\n- "))
	fmt.Fprintf(&b, "\nReply again with only the corrected %s, with no other text and no code fences.", what)
	if e.shape != "" {
		b.WriteString(" It must have this shape (a field marked ? may be left out):\n")
		b.WriteString(e.shape)
	}
	return b.String()
}

// decode fills dst (a pointer to a value of c.typ) from reply, or returns
// the problems found.
func (c *contract) decode(reply string, dst any) *DecodeError {
	fail := func(problems ...Problem) *DecodeError {
		return &DecodeError{Reply: reply, Problems: problems, object: c.object, shape: c.shape}
	}
	raw, pt, p := c.extract(reply)
	if p != nil {
		return fail(*p)
	}
	// The JSON is read into the tree the checker walks once (for an
	// object, while the extraction tests candidates), and into dst by
	// encoding/json once the tree passed. encoding/json reads the tree
	// only on text the parser refuses (raw is valid JSON, so only to keep
	// encoding/json's error if that ever happens).
	inst, ok := pt.tree, pt.ok && pt.span == string(raw)
	if !ok {
		inst, ok = parseTree(string(raw))
	}
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&inst); err != nil {
			return fail(Problem{Message: "the JSON is not valid: " + err.Error()})
		}
	}
	k := checker{c: c}
	k.check(inst, c.schema, make([]byte, 0, 128)) // paths grow in place
	if len(k.problems) == 0 && !c.complete {
		k.backstop(raw)
	}
	if len(k.problems) > 0 {
		return fail(k.problems...)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fail(unmarshalProblem(err))
	}
	return nil
}

// parsedSpan is a candidate's tree, read while testing it (see
// parseTree).
type parsedSpan struct {
	span string
	tree any
	ok   bool
}

// extract finds the JSON text to decode in reply, and for an object its
// tree, read while testing the candidates.
func (c *contract) extract(reply string) (json.RawMessage, parsedSpan, *Problem) {
	var pt parsedSpan
	if c.object {
		// parseTree accepts exactly what json.Valid accepts.
		raw, err := jsonextract.ObjectFunc(reply, func(span string) bool {
			tree, ok := parseTree(span)
			if ok {
				pt = parsedSpan{span: span, tree: tree, ok: true}
			}
			return ok
		})
		if err == nil {
			return raw, pt, nil
		}
		if t := strings.TrimSpace(reply); t != "" && json.Valid([]byte(t)) {
			return nil, pt, &Problem{Message: fmt.Sprintf("the reply is %s, but a JSON object {...} is required", describeJSON(t))}
		}
		return nil, pt, &Problem{Message: err.Error()}
	}
	if raw, ok := fencedValue(reply, true); ok {
		return raw, pt, nil
	}
	if raw, ok := fencedValue(reply, false); ok {
		return raw, pt, nil
	}
	if t := strings.TrimSpace(reply); json.Valid([]byte(t)) {
		return json.RawMessage(t), pt, nil
	}
	if c.schema.Type == "array" || slices.Contains(c.schema.Types, "array") {
		if raw, ok := firstArray(reply); ok {
			return raw, pt, nil
		}
	}
	want := "the JSON value"
	if w := typeWords(c.schema); w != "" {
		want += " (" + w + ")"
	}
	return nil, pt, &Problem{Message: "no valid JSON found in the reply; reply with only " + want}
}

// describeJSON names the kind of the valid JSON text t, with an excerpt.
func describeJSON(t string) string {
	ex := t
	if len(ex) > 40 {
		ex = ex[:40] + "..."
	}
	switch t[0] {
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string (" + ex + ")"
	case 't', 'f':
		return "the JSON boolean " + ex
	case 'n':
		return "JSON null"
	default:
		return "the JSON number " + ex
	}
}

// fencedValue returns the trimmed body of the first ``` block that is valid
// JSON, among blocks tagged json (wantJSON) or untagged (!wantJSON).
func fencedValue(text string, wantJSON bool) (json.RawMessage, bool) {
	const fence = "```"
	for {
		open := strings.Index(text, fence)
		if open < 0 {
			return nil, false
		}
		text = text[open+len(fence):]
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			return nil, false
		}
		info := strings.TrimSpace(text[:nl])
		text = text[nl+1:]
		end := strings.Index(text, fence)
		if end < 0 {
			return nil, false
		}
		body := strings.TrimSpace(text[:end])
		text = text[end+len(fence):]
		match := info == ""
		if wantJSON {
			match = strings.EqualFold(info, "json")
		}
		if match && body != "" && json.Valid([]byte(body)) {
			return json.RawMessage(body), true
		}
	}
}

// maxArrayTries bounds how many '[' firstArray tries, so that a reply full
// of brackets costs linear time.
const maxArrayTries = 8

// firstArray returns the first valid JSON array starting at a '[' in text.
func firstArray(text string) (json.RawMessage, bool) {
	for tries := 0; tries < maxArrayTries; tries++ {
		i := strings.IndexByte(text, '[')
		if i < 0 {
			return nil, false
		}
		text = text[i:]
		dec := json.NewDecoder(strings.NewReader(text))
		var raw json.RawMessage
		if dec.Decode(&raw) == nil {
			return raw, true
		}
		text = text[1:]
	}
	return nil, false
}

// unmarshalProblem words an encoding/json error for the model.
func unmarshalProblem(err error) Problem {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Type != nil {
		got := te.Value
		if got != "" {
			got = ", got " + got
		}
		if te.Field == "" {
			return Problem{Message: fmt.Sprintf("the JSON value must be %s%s", goTypeWords(te.Type), got)}
		}
		return Problem{Path: te.Field, Message: fmt.Sprintf("field `%s` must be %s%s", te.Field, goTypeWords(te.Type), got)}
	}
	return Problem{Message: "the JSON could not be read: " + strings.TrimPrefix(err.Error(), "json: ")}
}

// goTypeWords says in JSON terms what a Go type accepts.
func goTypeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer from 0 to " + strconv.FormatUint(^uint64(0)>>(64-t.Bits()), 10)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value of another kind"
}
