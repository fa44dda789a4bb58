package wire

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func post(body, contentType string) *http.Request {
	r := httptest.NewRequest("POST", "/threads/t1/runs", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// problemAt decodes body as a RunCreate and returns the problem, failing
// the test when there is none.
func problemAt(t *testing.T, body string) *Problem {
	t.Helper()
	_, p := Decode[RunCreate](post(body, "application/json"), 0)
	if p == nil {
		t.Fatalf("%s decoded without a problem", body)
	}
	return p
}

func pointers(p *Problem) []string {
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Pointer)
	}
	return out
}

func TestDecodeErrorClasses(t *testing.T) {
	t.Run("wrong content type is 415", func(t *testing.T) {
		_, p := Decode[RunCreate](post(`{"assistant_id":"a"}`, "text/plain"), 0)
		if p == nil || p.Status != 415 || !strings.Contains(p.Detail, "application/json") {
			t.Fatalf("got %v", p)
		}
		if _, p := Decode[RunCreate](post(`{"assistant_id":"a"}`, "application/json; charset=utf-8"), 0); p != nil {
			t.Fatalf("JSON with a charset: %v", p)
		}
		if _, p := Decode[RunCreate](post(`{"assistant_id":"a"}`, ""), 0); p != nil {
			t.Fatalf("no content type: %v", p)
		}
	})
	t.Run("over the limit is 413 naming it", func(t *testing.T) {
		body := `{"assistant_id":"a","input":{"text":"` + strings.Repeat("x", 200) + `"}}`
		_, p := Decode[RunCreate](post(body, "application/json"), 100)
		if p == nil || p.Status != 413 || !strings.Contains(p.Detail, "100 bytes") {
			t.Fatalf("got %v", p)
		}
		if _, p := Decode[RunCreate](post(body, "application/json"), int64(len(body))); p != nil {
			t.Fatalf("exactly at the limit: %v", p)
		}
	})
	t.Run("malformed JSON is 400 with the offset", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"assistant_id": "a",}`:        "at byte 22",
			`{"assistant_id": "a"`:          "ends at byte 20",
			`{"assistant_id": "a"} {}`:      "more data after the JSON value",
			`{"assistant_id": tru}`:         "at byte",
			"{\"assistant_id\": \"a\x01\"}": "at byte",
		} {
			p := problemAt(t, body)
			if p.Status != 400 || !strings.Contains(p.Detail, want) {
				t.Errorf("%q: got %d %q, want 400 with %q", body, p.Status, p.Detail, want)
			}
		}
	})
	t.Run("wrong types are 422 with the field path", func(t *testing.T) {
		p := problemAt(t, `{"assistant_id":"a","command":{"goto":[{"node":5}]}}`)
		if p.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Pointer != "/command/goto/0/node" {
			t.Fatalf("got %v %v", p, p.Errors)
		}
		if !strings.HasPrefix(p.Detail, "/command/goto/0/node: must be a node name") {
			t.Errorf("detail %q does not lead with the field", p.Detail)
		}
		p = problemAt(t, `{"assistant_id":7,"stream_subgraphs":"yes","after_seconds":"2","config":{"recursion_limit":2.5,"tags":"t"},"metadata":[]}`)
		want := []string{"/after_seconds", "/assistant_id", "/config/recursion_limit", "/config/tags", "/metadata", "/stream_subgraphs"}
		if got := pointers(p); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("pointers %v, want %v", got, want)
		}
		if !strings.Contains(p.Detail, "(and 5 more problems, listed in errors)") {
			t.Errorf("detail %q does not count the rest", p.Detail)
		}
	})
	t.Run("enum values are checked", func(t *testing.T) {
		cases := map[string]string{
			`{"assistant_id":"a","multitask_strategy":"queue"}`:      "/multitask_strategy",
			`{"assistant_id":"a","on_disconnect":"stop"}`:            "/on_disconnect",
			`{"assistant_id":"a","durability":"never"}`:              "/durability",
			`{"assistant_id":"a","stream_mode":"valuez"}`:            "/stream_mode",
			`{"assistant_id":"a","stream_mode":["values","tokens"]}`: "/stream_mode/1",
			`{"assistant_id":"a","if_not_exists":"maybe"}`:           "/if_not_exists",
			`{"assistant_id":"a","interrupt_before":"approve"}`:      "/interrupt_before",
		}
		for body, ptr := range cases {
			p := problemAt(t, body)
			if p.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Pointer != ptr {
				t.Errorf("%s: got %v %v, want 422 at %s", body, p, p.Errors, ptr)
			}
		}
		p := problemAt(t, `{"assistant_id":"a","multitask_strategy":"queue"}`)
		if !strings.Contains(p.Detail, `"reject", "interrupt", "rollback", "enqueue"`) {
			t.Errorf("detail %q does not list the allowed values", p.Detail)
		}
		if _, p := DecodeBytes[ThreadSearch]([]byte(`{"sort_by":"name","sort_order":"up"}`)); p == nil || strings.Join(pointers(p), " ") != "/sort_by /sort_order" {
			t.Errorf("sort: got %v", p)
		}
		if _, p := DecodeBytes[ThreadCreate]([]byte(`{"if_exists":"replace"}`)); p == nil || pointers(p)[0] != "/if_exists" {
			t.Errorf("if_exists: got %v", p)
		}
	})
	t.Run("required fields", func(t *testing.T) {
		p := problemAt(t, `{"input":{}}`)
		if p.Status != 422 || pointers(p)[0] != "/assistant_id" || !strings.Contains(p.Errors[0].Detail, "required") {
			t.Errorf("got %v %v", p, p.Errors)
		}
		_, p = DecodeBytes[StorePut]([]byte(`{"namespace":["a.b"],"value":{}}`))
		if p == nil || strings.Join(pointers(p), " ") != "/key" {
			t.Errorf("store put: got %v", p)
		}
		// The body's own rules run once the types are right.
		_, p = DecodeBytes[StorePut]([]byte(`{"namespace":["a.b", ""],"key":"k","value":null}`))
		if p == nil || strings.Join(pointers(p), " ") != "/namespace/0 /namespace/1 /value" {
			t.Errorf("store put rules: got %v", p)
		}
	})
	t.Run("rules across fields", func(t *testing.T) {
		for body, ptr := range map[string]string{
			`{"assistant_id":"a","input":{"x":1},"command":{"resume":1}}`:                   "/command",
			`{"assistant_id":"a","command":{}}`:                                             "/command",
			`{"assistant_id":"a","command":{"resume":null}}`:                                "/command",
			`{"assistant_id":" "}`:                                                          "/assistant_id",
			`{"assistant_id":"a","after_seconds":-1}`:                                       "/after_seconds",
			`{"assistant_id":"a","webhook":"ftp://x"}`:                                      "/webhook",
			`{"assistant_id":"a","checkpoint_id":"c1","checkpoint":{"checkpoint_id":"c2"}}`: "/checkpoint_id",
			`{"assistant_id":"a","context":[1]}`:                                            "/context",
			`{"assistant_id":"a","config":{"recursion_limit":0}}`:                           "/config/recursion_limit",
			`{"assistant_id":"a","command":{"update":[["k"]]}}`:                             "/command/update/0",
			`{"assistant_id":"a","command":{"goto":{"input":1}}}`:                           "/command/goto/node",
			`{"assistant_id":"a","command":{"goto":["ok",""]}}`:                             "/command/goto/1",
		} {
			p := problemAt(t, body)
			if p.Status != 422 || pointers(p)[0] != ptr {
				t.Errorf("%s: got %v %v, want 422 at %s", body, p, p.Errors, ptr)
			}
		}
		if _, p := DecodeBytes[RunCreate]([]byte(`{"assistant_id":"a","input":null,"command":{"resume":"yes"}}`)); p != nil {
			t.Errorf("null input with a command: %v", p)
		}
		if _, p := DecodeBytes[ThreadSearch]([]byte(`{"limit":0}`)); p == nil || pointers(p)[0] != "/limit" {
			t.Errorf("limit 0: %v", p)
		}
		if _, p := DecodeBytes[RunBatch]([]byte(`[]`)); p == nil || p.Status != 422 {
			t.Errorf("empty batch: %v", p)
		}
		if _, p := DecodeBytes[RunBatch]([]byte(`[{"assistant_id":"a"},{"assistantId":"b","streamMode":"nope"}]`)); p == nil || pointers(p)[0] != "/1/stream_mode" {
			t.Errorf("batch item error: %v", p)
		}
		if _, p := DecodeBytes[RunCancelMany]([]byte(`{}`)); p == nil {
			t.Error("cancel with nothing selected decoded")
		}
	})
}

func TestNullAndAbsent(t *testing.T) {
	v, p := DecodeBytes[RunCreate]([]byte(`{"assistant_id":"a","input":null,"config":null,"stream_mode":null,"metadata":null}`))
	if p != nil {
		t.Fatal(p)
	}
	if string(v.Input) != "null" || v.Config != nil || v.StreamMode != nil || v.Metadata != nil {
		t.Errorf("nulls: %+v", v)
	}
	v, _ = DecodeBytes[RunCreate]([]byte(`{"assistant_id":"a"}`))
	if v.Input != nil {
		t.Errorf("absent input = %q, want nil (distinct from null)", v.Input)
	}
	// An empty body is {}: fine where nothing is required.
	if _, p := Decode[ThreadCreate](httptest.NewRequest("POST", "/threads", nil), 0); p != nil {
		t.Errorf("empty body: %v", p)
	}
}

func TestUnknownFields(t *testing.T) {
	// LangGraph bodies tolerate members a newer SDK adds.
	v, p := DecodeBytes[RunCreate]([]byte(`{"assistant_id":"a","future_option":{"x":1},"config":{"run_name":"n","max_concurrency":2}}`))
	if p != nil || v.AssistantID != "a" {
		t.Fatalf("unknown fields in a LangGraph body: %v", p)
	}
	// Trellis's own bodies reject them, naming the known ones.
	_, p = DecodeBytes[strictBody]([]byte(`{"name":"x","nmae":"y"}`))
	if p == nil || p.Status != 422 || pointers(p)[0] != "/nmae" || !strings.Contains(p.Errors[0].Detail, `"name", "count"`) {
		t.Fatalf("strict body: %v %v", p, p.Errors)
	}
	// Exact names only: encoding/json's case-insensitive match would take this.
	v, _ = DecodeBytes[RunCreate]([]byte(`{"assistant_id":"a","Webhook":"not a url"}`))
	if v.Webhook != "" {
		t.Errorf("a member in another case was taken: %q", v.Webhook)
	}
}

// strictBody stands for a Trellis-only body.
type strictBody struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

func (*strictBody) Strict() {}

func TestIntegers(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"limit":10}`:                    true,
		`{"limit":10.0}`:                  true,
		`{"limit":1e1}`:                   true,
		`{"limit":10.5}`:                  false,
		`{"limit":1e400}`:                 false,
		`{"limit":"10"}`:                  false,
		`{"offset":-1}`:                   false,
		`{"limit":999999999999999999999}`: false,
	} {
		_, p := DecodeBytes[ThreadSearch]([]byte(body))
		if (p == nil) != ok {
			t.Errorf("%s: problem %v, want ok=%v", body, p, ok)
		}
	}
}

func TestDecodeQuery(t *testing.T) {
	q := func(s string) *http.Request { return httptest.NewRequest("GET", "/x?"+s, nil) }
	v, p := DecodeQuery[RunListQuery](q("limit=5&offset=2&status=success&select=run_id&select=status&unknown=1"))
	if p != nil || *v.Limit != 5 || v.Offset != 2 || v.Status != RunSuccess || len(v.Select) != 2 {
		t.Fatalf("got %+v %v", v, p)
	}
	_, p = DecodeQuery[RunListQuery](q("limit=ten&status=done"))
	if p == nil || p.Status != 422 || len(p.Errors) != 2 || p.Errors[0].Parameter != "limit" || p.Errors[1].Parameter != "status" || p.Errors[0].Pointer != "" {
		t.Fatalf("got %v %+v", p, p.Errors)
	}
	if !strings.HasPrefix(p.Detail, "query parameter limit: ") {
		t.Errorf("detail %q", p.Detail)
	}
	c, p := DecodeQuery[RunCancelQuery](q("wait=1&action=interrupt"))
	if p != nil || !c.Wait {
		t.Fatalf("wait=1: %+v %v", c, p)
	}
	if _, p := DecodeQuery[RunCancelQuery](q("wait=maybe")); p == nil || p.Errors[0].Parameter != "wait" {
		t.Errorf("wait=maybe: %v", p)
	}
	if _, p := DecodeQuery[RunCancelQuery](q("action=rollback&reason=taken")); p == nil || p.Errors[0].Parameter != "reason" {
		t.Errorf("reason with rollback: %v", p)
	}
	if _, p := DecodeQuery[StoreGetQuery](q("namespace=a.b")); p == nil || p.Errors[0].Parameter != "key" {
		t.Errorf("missing key: %v", p)
	}
	s, p := DecodeQuery[RunJoinStreamQuery](q("stream_mode=values"))
	if p != nil || len(s.StreamMode) != 1 || s.StreamMode[0] != StreamValues {
		t.Errorf("one stream mode: %+v %v", s, p)
	}
	if _, p := DecodeQuery[AssistantGraphQuery](q("xray=-2")); p == nil || p.Errors[0].Parameter != "xray" {
		t.Errorf("xray=-2: %v", p)
	}
}

func TestShapesRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in, out string
		v       any
	}{
		{`"values"`, `["values"]`, new(StreamModes)},
		{`["values","values","updates"]`, `["values","updates"]`, new(StreamModes)},
		{`"*"`, `"*"`, new(NodeSelector)},
		{`["a","b"]`, `["a","b"]`, new(NodeSelector)},
		{`"plan"`, `["plan"]`, new(Goto)},
		{`{"node":"w","input":{"i":1}}`, `[{"node":"w","input":{"i":1}}]`, new(Goto)},
		{`{"node":"w"}`, `[{"node":"w","input":null}]`, new(Goto)},
		{`["a",{"node":"w","input":2}]`, `["a",{"node":"w","input":2}]`, new(Goto)},
		{`{"b":1,"a":[2]}`, `{"a":[2],"b":1}`, new(Update)},
		{`[["a",1],["a",2]]`, `[["a",1],["a",2]]`, new(Update)},
		{`90`, `{"ttl":90,"strategy":"delete"}`, new(TTL)},
		{`{"ttl":5,"strategy":"delete"}`, `{"ttl":5,"strategy":"delete"}`, new(TTL)},
		{`{"ttl":5,"strategy":"keep_latest"}`, `{"ttl":5,"strategy":"keep_latest"}`, new(TTL)},
		{`false`, `false`, new(StoreIndex)},
		{`["$.a"]`, `["$.a"]`, new(StoreIndex)},
		{`true`, `true`, new(Xray)},
		{`3`, `3`, new(Xray)},
	} {
		if err := json.Unmarshal([]byte(c.in), c.v); err != nil {
			t.Errorf("%s into %T: %v", c.in, c.v, err)
			continue
		}
		got, err := json.Marshal(c.v)
		if err != nil || string(got) != c.out {
			t.Errorf("%s into %T encodes as %s (%v), want %s", c.in, c.v, got, err, c.out)
		}
	}
	for in, v := range map[string]any{
		`{"ttl":0}`:                      new(TTL),
		`{"ttl":5,"strategy":"archive"}`: new(TTL),
		`true`:                           new(StoreIndex),
		`[["a",1,2]]`:                    new(Update),
		`"state"`:                        new(Update),
		`5`:                              new(Goto),
		`["*"]`:                          new(StreamModes),
		`"values."`:                      new(StateSelectField),
	} {
		if err := json.Unmarshal([]byte(in), v); err == nil {
			t.Errorf("%s into %T decoded", in, v)
		}
	}
	var p *Problem
	err := json.Unmarshal([]byte(`{"ttl":5,"strategy":"archive"}`), new(TTL))
	if pe, ok := err.(*Problem); !ok || pe.Errors[0].Pointer != "/strategy" {
		t.Errorf("ttl strategy error = %v (%T), want a problem at /strategy", err, p)
	}
}
