// Package answer reads the plain answers people give to the agents'
// questions — true/false, "approve"/"reject", "是"/"否", an option's value, a
// form as an object — so the structured answer types of the agents can
// accept them beside their own JSON shape.
package answer

import (
	"bytes"
	"encoding/json"
	"strings"
)

// yes and no are the words of a confirmation, in English and Chinese,
// compared case-insensitively after trimming spaces and final punctuation.
var (
	yes = []string{"yes", "y", "ok", "okay", "approve", "approved", "accept", "accepted", "confirm", "confirmed", "go", "go ahead", "是", "是的", "确认", "同意", "好", "可以", "批准"}
	no  = []string{"no", "n", "reject", "rejected", "deny", "denied", "decline", "cancel", "stop", "否", "不", "不是", "拒绝", "不同意", "取消"}
)

// Words returns the words Confirm understands, yes first, for schemas.
func Words() (yesWords, noWords []string) { return yes, no }

// Confirm reads a confirmation: a JSON boolean, or a string holding one of
// the yes or no words. ok is false for anything else.
func Confirm(raw []byte) (value, ok bool) {
	switch t := string(bytes.TrimSpace(raw)); t {
	case "true", "false":
		return t == "true", true
	}
	s, isString := String(raw)
	if !isString {
		return false, false
	}
	return Word(s)
}

// Word reads one of the yes or no words.
func Word(s string) (value, ok bool) {
	w := strings.ToLower(strings.TrimRight(strings.TrimSpace(s), ".!。！"))
	for _, y := range yes {
		if w == y {
			return true, true
		}
	}
	for _, n := range no {
		if w == n {
			return false, true
		}
	}
	return false, false
}

// String reports whether raw is a JSON string, and its value.
func String(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Object reports whether raw is a JSON object.
func Object(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// HasKey reports whether the JSON object raw has one of keys.
func HasKey(raw []byte, keys ...string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// AnyOf returns a JSON Schema that accepts any of the given schemas.
func AnyOf(schemas ...json.RawMessage) json.RawMessage {
	parts := make([]json.RawMessage, 0, len(schemas))
	for _, s := range schemas {
		if len(s) > 0 {
			parts = append(parts, s)
		}
	}
	b, err := json.Marshal(map[string]any{"anyOf": parts})
	if err != nil {
		return nil // raw messages that are valid JSON always encode
	}
	return b
}

// ConfirmSchema is the JSON Schema of a plain confirmation: a boolean or
// one of the yes and no words.
func ConfirmSchema() json.RawMessage {
	words := append(append([]string{}, yes...), no...)
	b, _ := json.Marshal(map[string]any{"anyOf": []any{
		map[string]any{"type": "boolean"},
		map[string]any{"type": "string", "enum": words},
	}})
	return b
}
