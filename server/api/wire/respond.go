package wire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/server/db"
)

// MaxIDLength is the longest ID (assistant, thread, run, checkpoint) a
// path may carry: the store's (db.MaxIDLength).
const MaxIDLength = db.MaxIDLength

// PathID returns the path parameter name of r (set by http.ServeMux) as
// an ID; one that breaks the ID rule (db.IDProblem, the rule IDs are
// created under) is a 422 naming the parameter.
func PathID(r *http.Request, name string) (string, *Problem) {
	v := r.PathValue(name)
	if v == "" {
		return "", Invalid(FieldError{Path: name, Detail: "is empty; the path must name one"})
	}
	if p := db.IDProblem(v); p != "" {
		return "", Invalid(FieldError{Path: name, Detail: p})
	}
	return v, nil
}

// idErrors checks a client-chosen ID in a body against the ID rule
// (db.IDProblem); "" (the server chooses one) is fine.
func idErrors(pointer, id string) []FieldError {
	if id == "" {
		return nil
	}
	if p := db.IDProblem(id); p != "" {
		return []FieldError{{Pointer: pointer, Detail: p}}
	}
	return nil
}

// WriteJSON answers status with v as application/json. A status without a
// body (204, 202 with v nil) writes none: the SDK parses every other
// answer as JSON. A value that cannot be encoded is a bug; it is answered
// with a 500 problem, never a half-written body.
func WriteJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	if status == http.StatusNoContent || (v == nil && status == http.StatusAccepted) {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		NewProblem(http.StatusInternalServerError, "the answer could not be encoded (a bug in Trellis, please report it)").Write(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// WriteJSONObject answers status with obj, a JSON object, as WriteJSON
// would answer it decoded into a map[string]json.RawMessage: as it is
// when it is already what json.Marshal writes for that map
// (CanonicalObject), which saves parsing and encoding it again (a run's
// values can be large), and decoded and encoded otherwise.
func WriteJSONObject(w http.ResponseWriter, r *http.Request, status int, obj json.RawMessage) {
	if !CanonicalObject(obj) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(obj, &m); err != nil {
			NewProblem(http.StatusInternalServerError, "the answer could not be encoded (a bug in Trellis, please report it)").Write(w, r)
			return
		}
		WriteJSON(w, r, status, m)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(obj)
}

// CanonicalObject reports whether b is a JSON object exactly as
// json.Marshal writes a map[string]json.RawMessage holding it: compact,
// member names in sorted order, unique, valid UTF-8 and without escapes,
// and none of the characters Marshal escapes anywhere (<, >, &, U+2028,
// U+2029). Then decoding b into such a map and encoding it again gives b.
func CanonicalObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	depth, wantName := 0, false
	var prev []byte
	first := true
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', '<', '>', '&':
			return false // not compact, or escaped by Marshal
		case '{', '[':
			depth++
			wantName = depth == 1
		case '}', ']':
			depth--
		case ',':
			wantName = depth == 1
		case '"':
			j, escaped := i+1, false
			for ; j < len(b) && b[j] != '"'; j++ {
				switch b[j] {
				case '\\':
					escaped = true
					j++
				case '<', '>', '&':
					return false
				case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
					if j+2 < len(b) && b[j+1] == 0x80 && (b[j+2] == 0xA8 || b[j+2] == 0xA9) {
						return false
					}
				}
			}
			if j >= len(b) {
				return false
			}
			if wantName {
				name := b[i+1 : j]
				if escaped || !utf8.Valid(name) || (!first && bytes.Compare(prev, name) >= 0) {
					return false
				}
				prev, first, wantName = name, false, false
			}
			i = j
		}
	}
	return json.Valid(b)
}
