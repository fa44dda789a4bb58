package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength is the longest ID (assistant, thread, run, checkpoint) a
// path may carry.
const MaxIDLength = 256

// PathID returns the path parameter name of r (set by http.ServeMux) as
// an ID: non-empty, valid UTF-8, at most MaxIDLength bytes and free of
// control characters; anything else is a 422 naming the parameter.
func PathID(r *http.Request, name string) (string, *Problem) {
	v := r.PathValue(name)
	bad := func(why string) (string, *Problem) {
		return "", Invalid(FieldError{Path: name, Detail: why})
	}
	switch {
	case v == "":
		return bad("is empty; the path must name one")
	case len(v) > MaxIDLength:
		return bad(fmt.Sprintf("is %d bytes long; IDs are at most %d", len(v), MaxIDLength))
	case !utf8.ValidString(v):
		return bad("is not valid UTF-8")
	}
	for _, c := range v {
		if unicode.IsControl(c) {
			return bad(fmt.Sprintf("contains the control character %U", c))
		}
	}
	return v, nil
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
