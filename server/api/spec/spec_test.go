package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/server/api/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.golden.json")

func doc(t *testing.T) map[string]any {
	t.Helper()
	b, err := OpenAPI(Info{Title: "Trellis", Version: "test"}, Routes())
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// muxOf registers every route on a ServeMux (which panics on conflicting
// patterns) with a handler that names the route.
func muxOf(t *testing.T, routes []Route) *http.ServeMux {
	t.Helper()
	mux := http.NewServeMux()
	for _, r := range routes {
		id := r.OperationID
		mux.HandleFunc(r.MuxPattern(), func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Op", id) })
	}
	return mux
}

func TestRouteTableIsConsistent(t *testing.T) {
	routes := Routes()
	ids := map[string]bool{}
	patterns := map[string]bool{}
	for _, r := range routes {
		if ids[r.OperationID] || r.OperationID == "" {
			t.Errorf("operation ID %q is empty or used twice", r.OperationID)
		}
		ids[r.OperationID] = true
		if patterns[r.MuxPattern()] {
			t.Errorf("%s is in the table twice", r.MuxPattern())
		}
		patterns[r.MuxPattern()] = true
		if r.Status == 0 || r.Tag == "" || r.Summary == "" {
			t.Errorf("%s: status, tag and summary are required", r.OperationID)
		}
		if (r.Status == http.StatusNoContent || r.Status == http.StatusAccepted) && r.Response != nil {
			t.Errorf("%s: a %d answer has no body, but Response is %s", r.OperationID, r.Status, r.Response)
		}
		if r.Status == http.StatusOK && r.Response == nil && !r.Stream {
			t.Errorf("%s: a 200 without a body breaks the SDK (it parses every 200 as JSON); use 204", r.OperationID)
		}
		if r.Query != nil && r.Query.Kind() != reflect.Struct {
			t.Errorf("%s: query type %s is not a struct", r.OperationID, r.Query)
		}
	}
	mux := muxOf(t, routes) // panics on a conflict
	// Every route is reached by a request for its own pattern.
	for _, r := range routes {
		path := r.Pattern
		for _, p := range r.PathParams() {
			path = strings.Replace(path, "{"+p+"}", "x-"+p, 1)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(r.Method, path, nil))
		if got := rec.Header().Get("X-Op"); got != r.OperationID {
			t.Errorf("%s %s reached %q, want %q", r.Method, path, got, r.OperationID)
		}
	}
}

// TestDocumentListsExactlyTheRoutes: every route is one operation of the
// document, with its ID, and the document has nothing else.
func TestDocumentListsExactlyTheRoutes(t *testing.T) {
	d := doc(t)
	if d["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v", d["openapi"])
	}
	got := map[string]string{}
	for path, item := range d["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			got[strings.ToUpper(method)+" "+path] = op.(map[string]any)["operationId"].(string)
		}
	}
	want := map[string]string{}
	for _, r := range Routes() {
		want[r.MuxPattern()] = r.OperationID
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("route %s (%s) is %q in the document", k, v, got[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("the document has %s, which is not a route", k)
			}
		}
	}
	// Path parameters are declared, required, for every wildcard.
	for _, r := range Routes() {
		op := d["paths"].(map[string]any)[r.Pattern].(map[string]any)[strings.ToLower(r.Method)].(map[string]any)
		var inPath []string
		params, _ := op["parameters"].([]any)
		for _, p := range params {
			p := p.(map[string]any)
			if p["in"] == "path" {
				inPath = append(inPath, p["name"].(string))
			}
		}
		if !slices.Equal(inPath, r.PathParams()) {
			t.Errorf("%s: path parameters %v, want %v", r.OperationID, inPath, r.PathParams())
		}
	}
}

// resolved compiles the component name with every component as $defs, so
// references resolve.
func resolved(t *testing.T, d map[string]any, schema any) *jsonschema.Resolved {
	t.Helper()
	comps := d["components"].(map[string]any)["schemas"]
	raw, _ := json.Marshal(map[string]any{"$defs": comps, "allOf": []any{schema}})
	raw = bytes.ReplaceAll(raw, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema does not parse: %v", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("schema does not compile: %v\n%s", err, raw)
	}
	return r
}

func TestEverySchemaCompiles(t *testing.T) {
	d := doc(t)
	comps := d["components"].(map[string]any)["schemas"].(map[string]any)
	if len(comps) < 40 {
		t.Fatalf("only %d component schemas", len(comps))
	}
	for name := range comps {
		resolved(t, d, map[string]any{"$ref": "#/components/schemas/" + name})
	}
	// LangGraph's shapes tolerate new members; Trellis's own would say
	// additionalProperties false (none of the SDK's routes has one yet).
	for _, name := range []string{"RunCreate", "Command", "ThreadCreate", "Run", "Thread"} {
		if ap, ok := comps[name].(map[string]any)["additionalProperties"]; ok {
			t.Errorf("%s: additionalProperties = %v, want absent (LangGraph bodies accept unknown fields)", name, ap)
		}
	}
}

func TestGolden(t *testing.T) {
	b, err := OpenAPI(Info{Title: "Trellis", Version: "test"}, Routes())
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := OpenAPI(Info{Title: "Trellis", Version: "test"}, Routes())
	if !bytes.Equal(b, b2) {
		t.Fatal("two generations differ: the document is not deterministic")
	}
	golden := filepath.Join("testdata", "openapi.golden.json")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("the document differs from %s; if the change is deliberate, run go test ./server/api/spec -update and review the diff", golden)
	}
}

// fixture is a request the SDK sent (testdata/SOURCE.md).
type fixture struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	Query       string          `json:"query"`
	ContentType *string         `json:"content_type"`
	Body        json.RawMessage `json:"body"`
}

func (f fixture) request() *http.Request {
	var body []byte
	if len(f.Body) > 0 && string(f.Body) != "null" {
		body = f.Body
	}
	target := f.Path
	if f.Query != "" {
		target += "?" + f.Query
	}
	r := httptest.NewRequest(f.Method, target, bytes.NewReader(body))
	if f.ContentType != nil {
		r.Header.Set("Content-Type", *f.ContentType)
	}
	return r
}

// TestSDKRequestsDecode: every request the pinned SDK sends reaches its
// route, its query and body decode without a problem, and the body is
// valid against the route's schema in the document. Every route the SDK
// can call is covered by a fixture.
func TestSDKRequestsDecode(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "sdk", "*.json"))
	if len(files) < 50 {
		t.Fatalf("only %d fixtures", len(files))
	}
	routes := Routes()
	byID := map[string]Route{}
	for _, r := range routes {
		byID[r.OperationID] = r
	}
	mux := muxOf(t, routes)
	d := doc(t)
	covered := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, f.request())
			r, ok := byID[rec.Header().Get("X-Op")]
			if !ok {
				t.Fatalf("%s %s reaches no route (status %d)", f.Method, f.Path, rec.Code)
			}
			covered[r.OperationID] = true
			if r.Query != nil {
				q := reflect.New(r.Query).Interface()
				if p := wire.DecodeQueryInto(f.request(), q); p != nil {
					t.Fatalf("query %q: %v", f.Query, p)
				}
			}
			if r.Body == nil {
				if len(f.Body) > 0 && string(f.Body) != "null" {
					t.Fatalf("%s has no body, but the SDK sent one", r.OperationID)
				}
				return
			}
			v := reflect.New(r.Body).Interface()
			if p := wire.DecodeInto(f.request(), 0, v); p != nil {
				t.Fatalf("body: %v %v", p, p.Errors)
			}
			if len(f.Body) == 0 || string(f.Body) == "null" {
				return
			}
			op := d["paths"].(map[string]any)[r.Pattern].(map[string]any)[strings.ToLower(r.Method)].(map[string]any)
			schema := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
			var inst any
			_ = json.Unmarshal(f.Body, &inst)
			if err := resolved(t, d, schema).Validate(inst); err != nil {
				t.Errorf("the SDK's body does not fit the document's schema: %v", err)
			}
		})
	}
	var missing []string
	for _, r := range routes {
		if !covered[r.OperationID] && !slices.Contains([]string{"ok", "info", "openapi", "getThreadTranscript", "listThreadMessages" /* Trellis's own: no SDK calls them */}, r.OperationID) && !trellisOwnTags[r.Tag] {
			missing = append(missing, r.OperationID)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no SDK fixture reaches %v", missing)
	}
}

// TestSchemaAgreesWithDecoder: bodies the decoder refuses for their types
// or enum values fail the document's schema too, and the shapes it accepts
// pass it, so a client generated from the document sends what works.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	d := doc(t)
	schema := resolved(t, d, map[string]any{"$ref": "#/components/schemas/RunCreate"})
	for body, ok := range map[string]bool{
		`{"assistant_id":"a","command":{"goto":[{"node":5}]}}`:  false,
		`{"assistant_id":"a","command":{"goto":[{"input":1}]}}`: false,
		`{"assistant_id":"a","stream_mode":"valuez"}`:           false,
		`{"assistant_id":"a","stream_mode":["values",3]}`:       false,
		`{"assistant_id":"a","multitask_strategy":"queue"}`:     false,
		`{"assistant_id":"a","interrupt_before":"approve"}`:     false,
		`{"assistant_id":"a","command":{"update":[["k"]]}}`:     false,
		`{"assistant_id":7}`: false,
		`{"input":{}}`:       false,
		`{"assistant_id":"a","after_seconds":"2"}`:                                    false,
		`{"assistant_id":"a","command":{"goto":"n","update":[["k",1]]}}`:              true,
		`{"assistant_id":"a","command":{"goto":{"node":"w","input":null}}}`:           true,
		`{"assistant_id":"a","stream_mode":"values","interrupt_after":"*"}`:           true,
		`{"assistant_id":"a","input":null,"metadata":null,"config":null}`:             true,
		`{"assistant_id":"a","unknown_new_option":{"x":1},"config":{"run_name":"r"}}`: true,
	} {
		var inst any
		if err := json.Unmarshal([]byte(body), &inst); err != nil {
			t.Fatal(err)
		}
		_, p := wire.DecodeBytes[wire.RunCreate]([]byte(body))
		if (p == nil) != ok {
			t.Errorf("decoder on %s: %v, want ok=%v", body, p, ok)
		}
		if err := schema.Validate(inst); (err == nil) != ok {
			t.Errorf("schema on %s: %v, want ok=%v", body, err, ok)
		}
	}
}
