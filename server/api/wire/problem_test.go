package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

func TestProblemWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	p := Invalid(FieldError{Pointer: "/command/goto/0/node", Detail: "must be a node name"}, FieldError{Parameter: "limit", Detail: "must be an integer"})
	p.Write(rec, httptest.NewRequest("POST", "/threads/t1/runs?x=1", nil))
	if rec.Code != 422 || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "about:blank" || got["title"] != "Unprocessable Entity" || got["status"] != 422.0 || got["instance"] != "/threads/t1/runs" {
		t.Errorf("body %v", got)
	}
	if got["detail"] != "/command/goto/0/node: must be a node name (and 1 more problem, listed in errors)" {
		t.Errorf("detail %q", got["detail"])
	}
	errs := got["errors"].([]any)
	if len(errs) != 2 || errs[0].(map[string]any)["pointer"] != "/command/goto/0/node" || errs[1].(map[string]any)["parameter"] != "limit" {
		t.Errorf("errors %v", errs)
	}
	// A hand-built problem still writes a valid body.
	rec = httptest.NewRecorder()
	(&Problem{Detail: "x"}).Write(rec, nil)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"title":"Internal Server Error"`) {
		t.Errorf("zero problem: %d %s", rec.Code, rec.Body)
	}
	if Invalid() != nil {
		t.Error("Invalid() with no errors is not nil")
	}
}

func TestFromError(t *testing.T) {
	errMissing := errors.New("db: not found")
	errBusy := errors.New("db: busy")
	table := []ErrorStatus{{Err: errMissing, Status: 404}, {Err: errBusy, Status: 409, Detail: "the thread is busy; retry with multitask_strategy enqueue"}}
	if FromError(nil, table...) != nil {
		t.Error("nil error gave a problem")
	}
	nf := NotFound("thread", "t9")
	if got := FromError(fmt.Errorf("get: %w", nf), table...); got != nf {
		t.Errorf("a wrapped problem came back as %v", got)
	}
	if got := FromError(fmt.Errorf("thread t1: %w", errMissing), table...); got.Status != 404 || got.Detail != "thread t1: db: not found" {
		t.Errorf("sentinel: %v", got)
	}
	if got := FromError(errBusy, table...); got.Status != 409 || !strings.Contains(got.Detail, "enqueue") {
		t.Errorf("sentinel with detail: %v", got)
	}
	if got := FromError(fmt.Errorf("x: %w", context.DeadlineExceeded)); got.Status != 504 {
		t.Errorf("deadline: %v", got)
	}
	if got := FromError(context.Canceled); got.Status != 499 {
		t.Errorf("canceled: %v", got)
	}
	got := FromError(errors.New("pq: password authentication failed for user admin"))
	if got.Status != 500 || strings.Contains(got.Detail, "password") {
		t.Errorf("an unknown error leaks or is not a 500: %v", got)
	}
	if !strings.Contains(NotFound("run", "r1").Detail, `"r1"`) || NotFound("run", "r1").Status != 404 {
		t.Error("NotFound does not name the ID")
	}
}

// A storage failure of the database is 507 when the disk is full and 503
// with Retry-After when the database is unavailable, saying so without
// the database's path; the error's own text (for the log) names it.
func TestStorageFailuresAreProblems(t *testing.T) {
	for _, c := range []struct {
		kind       error
		status     int
		retryAfter string
	}{{db.ErrStorageFull, 507, ""}, {db.ErrUnavailable, 503, "5"}} {
		err := fmt.Errorf("create thread: %w", &db.StorageError{Kind: c.kind, Database: "/srv/trellis.db", Err: errors.New("disk I/O error")})
		rec := httptest.NewRecorder()
		FromError(err).Write(rec, httptest.NewRequest("POST", "/threads", nil))
		if rec.Code != c.status || rec.Header().Get("Retry-After") != c.retryAfter || strings.Contains(rec.Body.String(), "/srv/") {
			t.Errorf("%v: %d Retry-After %q %s; want %d Retry-After %q without the path", c.kind, rec.Code, rec.Header().Get("Retry-After"), rec.Body, c.status, c.retryAfter)
		}
	}
}
