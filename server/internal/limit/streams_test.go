package limit

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// On a route that streams only for some requests, the slot is taken when
// the response starts as text/event-stream: a tenant at its maximum gets
// the 429 problem instead of the stream, the handler's writes fail, and a
// JSON answer on the same route is never counted.
func TestStreamsCountsAResponseThatStartsAsAStream(t *testing.T) {
	c := NewCounter(1)
	tenant := func(*http.Request) string { return "t" }
	var writeErr error
	h := Streams(c, tenant, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stream") == "" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, writeErr = w.Write([]byte("data: x\n\n"))
		http.NewResponseController(w).Flush()
	}))
	if !c.Acquire("t") { // the tenant's one stream is open elsewhere
		t.Fatal("acquire")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/x", nil))
	if rec.Code != 200 || c.Held("t") != 1 {
		t.Errorf("a JSON answer: %d, held %d; want 200 and not counted", rec.Code, c.Held("t"))
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/x?stream=1", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || strings.Contains(rec.Body.String(), "data: x") ||
		strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") || !errors.Is(writeErr, ErrStreamRefused) {
		t.Errorf("a stream over the maximum: %d %q %q, write error %v; want the 429 problem and failed writes", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), writeErr)
	}
	c.Release("t")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/x?stream=1", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "data: x") || c.Held("t") != 0 {
		t.Errorf("a stream with the slot free: %d %q, held after %d; want the stream and the slot given back", rec.Code, rec.Body.String(), c.Held("t"))
	}
}
