package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testModel = "claude-test-1"

// received is one request as the test server saw it.
type received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// recorder is a test server that records every request and answers with
// its handler.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []received
}

// newServer starts a server answering with h (after recording the
// request); it is closed when the test ends.
func newServer(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		rec.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// only returns the single request the server got, failing otherwise.
func (r *recorder) only(t *testing.T) received {
	t.Helper()
	reqs := r.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want exactly 1", len(reqs))
	}
	return reqs[0]
}

// model returns a Model talking to the server through its own client (so
// no idle connection outlives the test).
func (r *recorder) model(t *testing.T, opts ...Option) *Model {
	t.Helper()
	all := append([]Option{WithAPIKey("test-key"), WithBaseURL(r.srv.URL), WithHTTPClient(r.srv.Client())}, opts...)
	m, err := New(testModel, all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func fixture(t *testing.T, path ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replyJSON answers with a JSON body and status.
func replyJSON(status int, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// replySSE answers with an event stream.
func replySSE(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}
}

// decodeJSON decodes b into a generic value for a semantic comparison.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return v
}

// bodyField returns one top-level field of a request body.
func bodyField(t *testing.T, body []byte, field string) any {
	t.Helper()
	obj, ok := decodeJSON(t, body).(map[string]any)
	if !ok {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	return obj[field]
}

func diffJSON(t *testing.T, got, want []byte) string {
	t.Helper()
	return cmp.Diff(decodeJSON(t, want), decodeJSON(t, got))
}
