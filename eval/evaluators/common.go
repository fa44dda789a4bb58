package evaluators

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/internal/jsonmatch"
	"github.com/trellis-agents/trellis/llm"
)

// decodeParams fills dst from a criterion's params, rejecting unknown
// fields; empty params leave dst's defaults.
func decodeParams(params json.RawMessage, dst any) error {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(p))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	if d.More() {
		return errors.New("params: trailing data after the JSON object")
	}
	return nil
}

// checkTrial rejects a trial an evaluator cannot read at all.
func checkTrial(t eval.Trial) error {
	if t.Thread == nil {
		return errors.New("the trial has no thread")
	}
	if t.Case == nil {
		return errors.New("the trial has no case")
	}
	return nil
}

// finalOutput is what a run produced: the last assistant message's text, or,
// for a graph without messages, its final state as a JSON object.
func finalOutput(th *eval.Thread) string {
	if len(th.Messages) > 0 {
		return th.FinalResponse()
	}
	if len(th.State) == 0 {
		return ""
	}
	b, err := json.Marshal(th.State)
	if err != nil {
		return ""
	}
	return string(b)
}

// turnsOf is the thread's user turns; a thread recorded without turn
// records counts as one turn holding its whole trajectory and its final
// output.
func turnsOf(th *eval.Thread) []eval.TurnRecord {
	if len(th.Turns) > 0 {
		return th.Turns
	}
	user := ""
	for _, m := range th.Messages {
		if m.Role == llm.RoleUser {
			user = m.Text()
			break
		}
	}
	return []eval.TurnRecord{{User: user, Response: finalOutput(th), ToolCalls: th.ToolCalls}}
}

// referenceText reads an expected output: a JSON string is its text;
// any other JSON value is its compact encoding. ok is false when the case
// has no expected output.
func referenceText(raw json.RawMessage) (text string, isString, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true, true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw), false, true
	}
	return buf.String(), false, true
}

// argsEqual compares two JSON argument objects by value (1 == 1.0; key
// order irrelevant); empty and null both mean "no arguments".
func argsEqual(a, b json.RawMessage) bool {
	va, errA := decodeArgs(a)
	vb, errB := decodeArgs(b)
	if errA != nil || errB != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return jsonmatch.Equal(va, vb)
}

func decodeArgs(a json.RawMessage) (any, error) {
	a = bytes.TrimSpace(a)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return map[string]any{}, nil
	}
	return jsonmatch.Decode(a)
}

// jsonSubset reports whether want is contained in got: objects by key
// (recursively), arrays element by element with equal lengths, scalars by
// value. It returns the path of the first difference.
func jsonSubset(want, got any, path string) (bool, string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false, orRoot(path) + ": want an object"
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return false, joinPath(path, k) + ": missing"
			}
			if ok, where := jsonSubset(wv, gv, joinPath(path, k)); !ok {
				return false, where
			}
		}
		return true, ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return false, orRoot(path) + ": want an array"
		}
		if len(g) != len(w) {
			return false, fmt.Sprintf("%s: want %d elements, got %d", orRoot(path), len(w), len(g))
		}
		for i := range w {
			if ok, where := jsonSubset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return false, where
			}
		}
		return true, ""
	default:
		if !jsonmatch.Equal(want, got) {
			return false, orRoot(path) + ": value differs"
		}
		return true, ""
	}
}

// argsSubset reports whether the expected arguments are a subset of the
// actual ones.
func argsSubset(want, got json.RawMessage) bool {
	w, errW := decodeArgs(want)
	g, errG := decodeArgs(got)
	if errW != nil || errG != nil {
		return false
	}
	ok, _ := jsonSubset(w, g, "")
	return ok
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

// clip shortens s for an explanation.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
