package spec

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRegister(t *testing.T) {
	routes := Routes()
	handlers := map[string]http.Handler{}
	for _, r := range routes {
		id := r.OperationID
		handlers[id] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(id)) })
	}
	mux := http.NewServeMux()
	if err := Register(mux, routes, handlers); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/threads/t1/runs/stream", nil))
	if rec.Body.String() != "streamRun" {
		t.Errorf("POST /threads/t1/runs/stream reached %q", rec.Body)
	}
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/nothing/here", nil))
	if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("an unserved path answered %d", rec.Code)
	}

	delete(handlers, "getRun")
	handlers["getRunn"] = handlers["ok"]
	err := Register(http.NewServeMux(), routes, handlers)
	if err == nil || !strings.Contains(err.Error(), "no handler for getRun") || !strings.Contains(err.Error(), "getRunn") {
		t.Errorf("err = %v, want it to name the missing and the unknown operation", err)
	}
}

func TestFallback(t *testing.T) {
	routes := Routes()
	mux := http.NewServeMux()
	handlers := map[string]http.Handler{}
	for _, r := range routes {
		handlers[r.OperationID] = http.NotFoundHandler()
	}
	if err := Register(mux, routes, handlers); err != nil {
		t.Fatal(err)
	}
	mux.Handle("/", Fallback(routes))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("PUT", "/threads/t1", nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != "DELETE, GET, PATCH" || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("PUT /threads/t1: %d, Allow %q, %s", rec.Code, rec.Header().Get("Allow"), rec.Body)
	}
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/nothing/here", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "no route for POST /nothing/here") {
		t.Errorf("POST /nothing/here: %d %s", rec.Code, rec.Body)
	}
}
