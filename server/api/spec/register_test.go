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
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/runs/crons", nil))
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
