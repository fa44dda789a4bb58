package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// waitBody is a runs/wait body as the SDK sends it.
const waitBody = `{"assistant_id":"echo","input":{"log":["hi"]},"if_not_exists":"create","stream_mode":["values"],"config":{"configurable":{"user_id":"u1"}},"metadata":{"source":"sdk"}}`

// maxMiddlewareAllocs bounds the allocations every request pays in the
// server's middleware and mux on top of its handler (measured: 10 with the
// telemetry's recorder reused by the request log, its counters kept by
// label and the body read once; 19 before).
const maxMiddlewareAllocs = 12

// TestMiddlewareAllocs keeps what the middleware (telemetry, request log,
// auth, rate and body limits, route) costs a runs/wait request from
// growing: the same stub handler (decode the body, answer values) is
// called through the server's wiring and directly, and the difference is
// bounded.
func TestMiddlewareAllocs(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "trellis.db")}, &blocked)
	answer := map[string]json.RawMessage{"log": json.RawMessage(`["hi","echo hi"]`)}
	stub := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, p := wire.Decode[wire.RunCreate](req, 0); p != nil {
			p.Write(w, req)
			return
		}
		w.Header().Set("Content-Location", "/threads/t/runs/r")
		wire.WriteJSON(w, req, http.StatusOK, answer)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /threads/{thread_id}/runs/wait", r.s.tel.Route(requestTenant, stub))
	h := r.s.middleware(mux, false)
	newReq := func() *http.Request {
		req := httptest.NewRequest(http.MethodPost, "/threads/t/runs/wait", strings.NewReader(waitBody))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	serve := func(h http.Handler) func() {
		return func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, newReq())
			if w.Code != http.StatusOK {
				t.Fatalf("answered %d: %s", w.Code, w.Body)
			}
		}
	}
	direct := testing.AllocsPerRun(200, serve(stub))
	wired := testing.AllocsPerRun(200, serve(h))
	t.Logf("handler alone %.0f allocations, through the middleware %.0f", direct, wired)
	if extra := wired - direct; extra > maxMiddlewareAllocs {
		t.Fatalf("the middleware took %.0f allocations per request, more than the %d bound", extra, maxMiddlewareAllocs)
	}
}
