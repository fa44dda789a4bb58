package spec

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// trellisOwnTags are the groups of Trellis's own routes, which no SDK
// calls, so no captured fixture reaches them; TestTrellisOwnBodies
// checks requests written here against the decoder and the document.
var trellisOwnTags = map[string]bool{"Datasets": true, "Feedback": true, "Experiments": true}

// ownRequests are requests to every Trellis-own route, with every body
// member the route knows.
var ownRequests = []struct{ method, path, query, body string }{
	{"POST", "/datasets", "", `{"name":"qa","description":"d","metadata":{"team":"x"},"criteria":[{"evaluator":"exact","threshold":1}],"cases":[{"id":"c1","input":{"message":"hi"},"expect":{"output":"hello"}}]}`},
	{"POST", "/datasets/search", "", `{"name":"qa","limit":5,"offset":0}`},
	{"POST", "/datasets/import", "", ``},
	{"GET", "/datasets/d1", "", ``},
	{"PATCH", "/datasets/d1", "", `{"name":"qa2","description":"e","metadata":{"k":1},"criteria":[]}`},
	{"DELETE", "/datasets/d1", "", ``},
	{"POST", "/datasets/d1/cases", "", `{"cases":[{"input":{"message":"a"}},{"id":"c2","input":{"state":{"n":1}}}]}`},
	{"GET", "/datasets/d1/cases", "version=2", ``},
	{"PATCH", "/datasets/d1/cases/c1", "", `{"input":{"message":"new"}}`},
	{"DELETE", "/datasets/d1/cases/c1", "", ``},
	{"GET", "/datasets/d1/export", "version=1", ``},
	{"GET", "/threads/t1/case", "", ``},
	{"POST", "/threads/t1/runs/r1/feedback", "", `{"key":"user_score","score":1,"value":"good","comment":"nice","correction":{"answer":"x"},"message_id":"m1"}`},
	{"GET", "/threads/t1/runs/r1/feedback", "", ``},
	{"DELETE", "/threads/t1/runs/r1/feedback/f1", "", ``},
	{"POST", "/experiments", "", `{"name":"e","dataset_id":"d1","dataset_version":2,"assistant_id":"a1","repetitions":3,"concurrency":2,"baseline_experiment_id":"e0","metadata":{"k":1}}`},
	{"GET", "/experiments", "dataset_id=d1&assistant_id=a1&limit=5&offset=1", ``},
	{"GET", "/experiments/e1", "", ``},
	{"GET", "/experiments/e1/results", "", ``},
	{"GET", "/experiments/e1/stream", "", ``},
	{"POST", "/experiments/e1/cancel", "", ``},
	{"GET", "/experiments/e1/compare", "baseline=e0", ``},
}

// Every Trellis-own route is reached by a request above, its query and
// JSON body decode, and the body fits the document's schema.
func TestTrellisOwnBodies(t *testing.T) {
	routes := Routes()
	byID := map[string]Route{}
	for _, r := range routes {
		byID[r.OperationID] = r
	}
	mux := muxOf(t, routes)
	d := doc(t)
	covered := map[string]bool{}
	for _, q := range ownRequests {
		req := func() *http.Request {
			r := httptest.NewRequest(q.method, q.path+"?"+q.query, strings.NewReader(q.body))
			if q.body != "" {
				r.Header.Set("Content-Type", "application/json")
			}
			return r
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req())
		r, ok := byID[rec.Header().Get("X-Op")]
		if !ok || !trellisOwnTags[r.Tag] {
			t.Errorf("%s %s reaches %q, not a Trellis-own route", q.method, q.path, rec.Header().Get("X-Op"))
			continue
		}
		covered[r.OperationID] = true
		if r.Query != nil {
			if p := wire.DecodeQueryInto(req(), reflect.New(r.Query).Interface()); p != nil {
				t.Errorf("%s query: %v", r.OperationID, p)
			}
		}
		if q.body == "" {
			continue
		}
		if p := wire.DecodeInto(req(), 0, reflect.New(r.Body).Interface()); p != nil {
			t.Errorf("%s body: %v %v", r.OperationID, p, p.Errors)
		}
		op := d["paths"].(map[string]any)[r.Pattern].(map[string]any)[strings.ToLower(r.Method)].(map[string]any)
		schema := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
		var inst any
		_ = json.Unmarshal([]byte(q.body), &inst)
		if err := resolved(t, d, schema).Validate(inst); err != nil {
			t.Errorf("%s: the body does not fit the document's schema: %v", r.OperationID, err)
		}
	}
	for _, r := range routes {
		if trellisOwnTags[r.Tag] && !covered[r.OperationID] {
			t.Errorf("no request reaches %s", r.OperationID)
		}
	}
	// A misspelt member is refused: these bodies are strict.
	if p := wire.DecodeInto(httptest.NewRequest("POST", "/datasets", strings.NewReader(`{"name":"x","case":[]}`)), 0, new(wire.DatasetCreate)); p == nil || p.Status != 422 {
		t.Errorf("an unknown member of a dataset body: %v, want 422", p)
	}
}
