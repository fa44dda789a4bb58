package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
)

// ProblemContentType is the media type of every error body (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details body: every 4xx and 5xx the API
// answers is one. The LangGraph JS SDK turns a failed response into an
// Error whose message is "HTTP <status>: <the body text>", so Detail must
// make sense on its own: it names the first problem and says how to fix it;
// Errors lists every problem found, each with where it is.
//
// Problem implements error, so lower layers may return one and the handler
// writes it unchanged (see FromError).
type Problem struct {
	// Type is a URI naming the kind of problem; Trellis uses
	// "about:blank" (the status says it all) unless a kind needs its own
	// page. Empty is written as "about:blank".
	Type string `json:"type"`
	// Title is the short, fixed summary of the status ("Not Found").
	Title string `json:"title"`
	// Status is the HTTP status code, repeated in the body.
	Status int `json:"status"`
	// Detail explains this occurrence: what was wrong and what to do.
	Detail string `json:"detail,omitempty"`
	// Instance is the request path the problem occurred on (set by Write
	// when empty).
	Instance string `json:"instance,omitempty"`
	// Errors lists each problem in the request, in document order.
	Errors []FieldError `json:"errors,omitempty"`
	// RetryAfter, when positive, is sent as the Retry-After header (in
	// seconds), not in the body.
	RetryAfter int `json:"-"`
}

// FieldError is one problem in a request: in the body (Pointer, a JSON
// Pointer, RFC 6901, such as "/command/goto/0/node"; "" is the whole body),
// in a query parameter (Parameter), in a path parameter (Path) or in a
// header (Header). Exactly one location is set.
type FieldError struct {
	// Pointer locates the problem in the JSON body.
	Pointer string `json:"pointer,omitempty"`
	// Parameter names the query parameter at fault.
	Parameter string `json:"parameter,omitempty"`
	// Path names the path parameter at fault.
	Path string `json:"path,omitempty"`
	// Header names the request header at fault.
	Header string `json:"header,omitempty"`
	// Detail says what is wrong there and what is expected.
	Detail string `json:"detail"`
}

// where is the location of e for messages: "/a/b", "query parameter x", ...
func (e FieldError) where() string {
	switch {
	case e.Parameter != "":
		return "query parameter " + e.Parameter
	case e.Path != "":
		return "path parameter " + e.Path
	case e.Header != "":
		return "header " + e.Header
	case e.Pointer == "":
		return "the body"
	default:
		return e.Pointer
	}
}

// String renders e as "location: detail".
func (e FieldError) String() string { return e.where() + ": " + e.Detail }

// Error renders the problem as "status title: detail".
func (p *Problem) Error() string {
	if p.Detail == "" {
		return fmt.Sprintf("%d %s", p.Status, p.Title)
	}
	return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
}

// NewProblem returns a problem with the status's standard title and the
// given detail.
func NewProblem(status int, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
}

// Invalid returns a 422 problem listing errs; its Detail names the first
// and counts the rest. It returns nil when errs is empty, so a validator's
// result can be passed straight through.
func Invalid(errs ...FieldError) *Problem {
	if len(errs) == 0 {
		return nil
	}
	detail := errs[0].String()
	if n := len(errs) - 1; n == 1 {
		detail += " (and 1 more problem, listed in errors)"
	} else if n > 1 {
		detail += fmt.Sprintf(" (and %d more problems, listed in errors)", n)
	}
	p := NewProblem(http.StatusUnprocessableEntity, detail)
	p.Errors = errs
	return p
}

// NotFound is the 404 for a missing resource: kind is "assistant",
// "thread", "run", "checkpoint", "store item", ...; id is what the client
// asked for.
func NotFound(kind, id string) *Problem {
	return NewProblem(http.StatusNotFound, fmt.Sprintf("no %s with ID %q exists (for this tenant); check the ID, or list the %ss to find it", kind, id, kind))
}

// Conflict is the 409 for a request that clashes with the current state
// (an ID in use, a busy thread with multitask_strategy "reject"); detail
// says what clashed and how to proceed.
func Conflict(detail string) *Problem { return NewProblem(http.StatusConflict, detail) }

// BadRequest is the 400 for a request that cannot be read at all.
func BadRequest(detail string) *Problem { return NewProblem(http.StatusBadRequest, detail) }

// ErrorStatus maps a sentinel error (matched with errors.Is) to the status
// FromError answers for it; Detail, when set, replaces the error's text.
type ErrorStatus struct {
	Err    error
	Status int
	Detail string
}

// FromError turns an error from a lower layer into the problem to answer:
//   - a *Problem anywhere in err's chain is returned as it is;
//   - the first ErrorStatus whose Err matches gives the status, with err's
//     text (or the entry's Detail) as the detail;
//   - a storage failure of the database (db.StorageError) is 507 when
//     the disk is full, 503 with Retry-After when the database is
//     unavailable, saying so without the server's paths;
//   - context.DeadlineExceeded is 504; context.Canceled is 499 (the
//     client went away; nobody reads the body);
//   - anything else is a 500 whose detail does not leak internals: the
//     handler must log err itself.
//
// It returns nil for a nil error.
func FromError(err error, table ...ErrorStatus) *Problem {
	if err == nil {
		return nil
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	if sp := StorageProblem(err); sp != nil {
		return sp
	}
	for _, e := range table {
		if errors.Is(err, e.Err) {
			d := e.Detail
			if d == "" {
				d = err.Error()
			}
			return NewProblem(e.Status, d)
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return NewProblem(http.StatusGatewayTimeout, "the server did not finish in time; retry, or wait for the run with GET .../join")
	case errors.Is(err, context.Canceled):
		return &Problem{Type: "about:blank", Title: "Client Closed Request", Status: 499, Detail: "the request was cancelled"}
	}
	return NewProblem(http.StatusInternalServerError, "internal error; the server log has the details (this is a bug in Trellis, please report it)")
}

// StorageProblem is the problem for a storage failure in err's chain
// (db.StorageError): 507 Insufficient Storage when the disk is full, 503
// Service Unavailable with Retry-After when the database is unavailable;
// nil when err is not one.
func StorageProblem(err error) *Problem {
	se, ok := db.AsStorage(err)
	if !ok {
		return nil
	}
	if errors.Is(se.Kind, db.ErrStorageFull) {
		return NewProblem(http.StatusInsufficientStorage, se.Advice())
	}
	p := NewProblem(http.StatusServiceUnavailable, se.Advice())
	p.RetryAfter = db.RetryAfterSeconds
	return p
}

// Write sends p as application/problem+json with its status. Instance
// defaults to the request's path; Type and Title get their defaults when
// empty, so a hand-built Problem is still a valid body.
func (p *Problem) Write(w http.ResponseWriter, r *http.Request) {
	q := *p
	if q.Type == "" {
		q.Type = "about:blank"
	}
	if q.Status < 400 || q.Status > 599 {
		q.Status = http.StatusInternalServerError
	}
	if q.Title == "" {
		q.Title = http.StatusText(q.Status)
		if q.Title == "" {
			q.Title = "Error"
		}
	}
	if q.Instance == "" && r != nil && r.URL != nil {
		q.Instance = r.URL.Path
	}
	body, err := json.Marshal(&q)
	if err != nil { // cannot happen: every field is a string, int or list of them
		body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500}`)
		q.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	if q.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(q.RetryAfter))
	}
	w.WriteHeader(q.Status)
	_, _ = w.Write(body)
}

// escapePointer escapes one JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
