// Package adk imports and exports Google ADK (Agent Development Kit) eval
// sets, so a team moving to Trellis keeps its evaluations:
//
//   - *.evalset.json: an EvalSet (eval_set_id, name, description,
//     eval_cases), each EvalCase a conversation of invocations (user_content,
//     final_response, intermediate_data with tool_uses and tool_responses,
//     or invocation_events), with session_input, conversation_scenario,
//     rubrics and timestamps;
//   - the older *.test.json (a list of {query, expected_tool_use,
//     reference} turns making one case) and the old eval-set list
//     ({name, data, initial_session});
//   - test_config.json beside the set: criteria by ADK metric name, as a
//     threshold or a criterion object; without one, ADK's defaults
//     (tool_trajectory_avg_score 1.0, response_match_score 0.8).
//
// A case's first invocation becomes Input.Message, the others Turns; each
// invocation's expected final response and tool uses become
// Expect.Turns[i]; session_input.state becomes Input.Context. ADK metrics
// map to the built-in evaluators with ADK's semantics (see Criteria). What
// Trellis has no field for — invocation ids, timestamps, tool responses,
// app_name, user_id, rubrics, unknown fields — is kept in Metadata under
// "adk", so Export writes the set back as it was read.
//
// The package reads both ADK's snake_case and its camelCase aliases, and
// writes snake_case, as ADK does.
package adk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

// MetadataKey is the Case.Metadata and Dataset.Metadata key holding the ADK
// fields Trellis has no place for.
const MetadataKey = "adk"

// maxFile bounds an eval set or config file read by ReadFile.
const maxFile = 64 << 20

// fields decodes a JSON object, with keys in snake_case (ADK's camelCase
// aliases converted). Only this level is converted: values, such as tool
// arguments or session state, keep their keys.
func fields(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("adk: %s: want a JSON object: %w", what, err)
	}
	if m == nil {
		return nil, fmt.Errorf("adk: %s: want a JSON object, got null", what)
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[snake(k)] = v
	}
	return out, nil
}

// snake converts camelCase to snake_case ("evalSetId" → "eval_set_id").
func snake(k string) string {
	if strings.IndexFunc(k, unicode.IsUpper) < 0 {
		return k
	}
	var b strings.Builder
	for i, r := range k {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// present reports whether a field is set to something other than null.
func present(m map[string]json.RawMessage, k string) bool {
	v, ok := m[k]
	return ok && !isNull(v)
}

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || bytes.Equal(v, []byte("null"))
}

func str(m map[string]json.RawMessage, k, what string) (string, error) {
	if !present(m, k) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m[k], &s); err != nil {
		return "", fmt.Errorf("adk: %s.%s: want a string: %w", what, k, err)
	}
	return s, nil
}

// content is the text of a genai Content: its parts' texts joined by
// newlines, as ADK's evaluators read it.
func contentText(raw json.RawMessage, what string) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	c, err := fields(raw, what)
	if err != nil {
		return "", err
	}
	if !present(c, "parts") {
		return "", nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(c["parts"], &parts); err != nil {
		return "", fmt.Errorf("adk: %s.parts: %w", what, err)
	}
	var texts []string
	for _, p := range parts {
		if t, ok := p["text"]; ok && !isNull(t) {
			var s string
			if err := json.Unmarshal(t, &s); err != nil {
				return "", fmt.Errorf("adk: %s.parts[].text: %w", what, err)
			}
			if s != "" {
				texts = append(texts, s)
			}
		}
	}
	return strings.Join(texts, "\n"), nil
}

// defaultContent is the Content ADK writes for a plain text message.
func defaultContent(role, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"parts": []map[string]string{{"text": text}}, "role": role})
	return b
}

// sameJSON compares two JSON values by value, null fields and empty
// defaults aside (ADK writes every default; a hand-written file omits
// them).
func sameJSON(a, b json.RawMessage) bool {
	va, errA := jsonmatch.Decode(a)
	vb, errB := jsonmatch.Decode(b)
	if errA != nil || errB != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return jsonmatch.Equal(pruneDefaults(va), pruneDefaults(vb))
}

// pruneDefaults drops object fields that are null, empty lists or
// objects, and snake-cases object keys, recursively.
func pruneDefaults(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			e = pruneDefaults(e)
			if isEmpty(e) {
				continue
			}
			out[snake(k)] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneDefaults(e)
		}
		return out
	}
	return v
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// object is a JSON object written with its keys in a fixed order: the
// known fields in ADK's order, then the kept ones sorted.
type object []member

type member struct {
	key   string
	value json.RawMessage
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// set adds or replaces a member.
func (o *object) set(k string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, member{k, v})
}

// rest appends the members of kept not already in o, sorted by key.
func (o *object) rest(kept map[string]json.RawMessage) {
	keys := make([]string, 0, len(kept))
	for k := range kept {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for _, m := range *o {
			found = found || m.key == k
		}
		if !found {
			*o = append(*o, member{k, kept[k]})
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("adk: encoding %T: %v", v, err)) // only values built here
	}
	return b
}
