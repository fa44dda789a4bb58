package wire

import (
	"encoding/json"
	"net/http"

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
