package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fixtureModel = "gpt-4o-fixture"

// recorded is one request the fake server received.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

// fakeServer is an httptest server that records every request before
// handing it to the case's handler.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newServer(t *testing.T, h http.HandlerFunc) *fakeServer {
	t.Helper()
	s := &fakeServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *fakeServer) last(t *testing.T) recorded {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return s.reqs[len(s.reqs)-1]
}

// newModel returns a model talking to s with a fixed key.
func newModel(t *testing.T, s *fakeServer, opts ...Option) *Model {
	t.Helper()
	base := []Option{WithBaseURL(s.URL + "/v1"), WithAPIKey("sk-fixture"), WithHTTPClient(s.Client())}
	m, err := New(fixtureModel, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveJSON answers every request with status, headers and body.
func serveJSON(status int, body []byte, header map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// serveSSE replays a recorded event stream, flushing each event.
func serveSSE(stream []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, ev := range sseEvents(stream) {
			_, _ = w.Write(ev)
			w.(http.Flusher).Flush()
		}
	}
}

// sseEvents splits a stream into its events, each ending in a blank line.
func sseEvents(stream []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.Split(stream, []byte("\n\n")) {
		if len(bytes.TrimSpace(ev)) > 0 {
			out = append(out, append(ev, '\n', '\n'))
		}
	}
	return out
}

// dataEvents counts the events carrying a JSON chunk (not [DONE]).
func dataEvents(stream []byte) int {
	n := 0
	for _, ev := range sseEvents(stream) {
		if !bytes.Contains(ev, []byte("[DONE]")) {
			n++
		}
	}
	return n
}

// collect drains a stream, failing the test on an error.
func collect(t *testing.T, seq func(func(llm.Chunk, error) bool)) []llm.Chunk {
	t.Helper()
	var out []llm.Chunk
	for c, err := range seq {
		if err != nil {
			t.Fatalf("stream error after %d chunks: %v", len(out), err)
		}
		out = append(out, c)
	}
	return out
}

// decodeJSON decodes b with numbers kept exact.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// bodyField returns one top-level field of a JSON request body.
func bodyField(t *testing.T, body []byte, key string) (any, bool) {
	t.Helper()
	m, ok := decodeJSON(t, body).(map[string]any)
	if !ok {
		t.Fatalf("body is not an object: %s", body)
	}
	v, ok := m[key]
	return v, ok
}

func jsonDiff(t *testing.T, want, got []byte) string {
	t.Helper()
	return cmp.Diff(decodeJSON(t, want), decodeJSON(t, got))
}

func asAPIError(t *testing.T, err error) *llm.APIError {
	t.Helper()
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *llm.APIError", err, err)
	}
	return ae
}
