package wire

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPathID(t *testing.T) {
	mux := http.NewServeMux()
	var got string
	var prob *Problem
	mux.HandleFunc("GET /threads/{thread_id}", func(_ http.ResponseWriter, r *http.Request) { got, prob = PathID(r, "thread_id") })
	for path, want := range map[string]string{
		"/threads/6f1c2a0e-0000-4000-8000-000000000001":  "6f1c2a0e-0000-4000-8000-000000000001",
		"/threads/" + strings.Repeat("a", MaxIDLength):   strings.Repeat("a", MaxIDLength),
		"/threads/%E4%B8%AD":                             "中",
		"/threads/" + strings.Repeat("a", MaxIDLength+1): "",
		"/threads/a%00b":                                 "",
		"/threads/a%FFb":                                 "",
	} {
		got, prob = "", nil
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		if got != want || (want == "") != (prob != nil) {
			t.Errorf("%s: got %q, %v; want %q", path, got, prob, want)
		}
		if prob != nil && (prob.Status != 422 || prob.Errors[0].Path != "thread_id") {
			t.Errorf("%s: problem %v %+v", path, prob, prob.Errors)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteJSON(rec, nil, 200, Ok{Ok: true})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != `{"ok":true}` {
		t.Errorf("ok: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteJSON(rec, nil, 204, Ok{Ok: true})
	if rec.Code != 204 || rec.Body.Len() != 0 {
		t.Errorf("204 wrote %q", rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteJSON(rec, httptest.NewRequest("GET", "/x", nil), 200, math.NaN())
	if rec.Code != 500 || rec.Header().Get("Content-Type") != ProblemContentType {
		t.Errorf("unencodable: %d %s", rec.Code, rec.Body)
	}
}
