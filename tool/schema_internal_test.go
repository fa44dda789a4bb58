package tool

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestCheckWording(t *testing.T) {
	const sch = `{
		"type": "object",
		"properties": {
			"unit": {"enum": ["c", "f"]},
			"count": {"type": "integer", "minimum": 1, "maximum": 10},
			"ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
			"name": {"type": "string", "minLength": 2, "maxLength": 4},
			"code": {"type": "string", "pattern": "^[A-Z]+$"},
			"items": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
			"labels": {"type": "object", "additionalProperties": {"type": "string"}}
		},
		"additionalProperties": false
	}`
	s, err := compileSchema(json.RawMessage(sch))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ args, want string }{
		{`{"unit":"c","count":3,"ratio":0.5,"name":"ab","code":"AB","items":[{"id":"x"}],"labels":{"a":"b"}}`, ""},
		{`{"unit":"k"}`, `"unit" must be one of "c", "f", not "k"`},
		{`{"count":0}`, `"count" must be at least 1, not 0`},
		{`{"count":11}`, `"count" must be at most 10, not 11`},
		{`{"ratio":0}`, `"ratio" must be greater than 0, not 0`},
		{`{"ratio":1}`, `"ratio" must be less than 1, not 1`},
		{`{"name":"a"}`, `"name" must be at least 2 characters long; it has 1`},
		{`{"name":"abcdé"}`, `"name" must be at most 4 characters long; it has 5`},
		{`{"items":[]}`, `"items" must have at least 1 item; it has 0`},
		{`{"items":[{"id":"a"},{"id":"b"},{"id":"c"}]}`, `"items" must have at most 2 items; it has 3`},
		{`{"items":[{"id":"a"},{}]}`, `missing required field "items[1].id" (a string)`},
		{`{"labels":{"a":1}}`, `"labels.a" must be a string, not an integer (1)`},
		// Keywords the walk leaves to the library keep its wording, with the path.
		{`{"code":"ab"}`, `"code": pattern: "ab" does not match regular expression "^[A-Z]+$"`},
	}
	for _, tc := range cases {
		err := s.check("t", json.RawMessage(tc.args))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.args, err)
			}
			continue
		}
		ae, ok := err.(*ArgumentError)
		if !ok || ae.Problem != tc.want {
			t.Errorf("%s:\n got %v\nwant problem %s", tc.args, err, tc.want)
		}
	}
}

func TestCompileSchema(t *testing.T) {
	if s, err := compileSchema(nil); s != nil || err != nil {
		t.Errorf("empty schema = %v, %v", s, err)
	}
	// With no schema, arguments must still be an object.
	var none *schema
	if err := none.check("t", json.RawMessage(`[1]`)); err == nil || !strings.Contains(err.Error(), "must be a JSON object") {
		t.Errorf("nil schema check = %v", err)
	}
	if err := none.check("t", json.RawMessage(`{"any":1}`)); err != nil {
		t.Errorf("nil schema check = %v", err)
	}
	// A declared draft the library does not validate is checked as 2020-12.
	old, err := compileSchema(json.RawMessage(`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"type": "string", "pattern": "^x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.check("t", json.RawMessage(`{"a":"xy"}`)); err != nil {
		t.Errorf("draft-04 schema: %v", err)
	}
	if err := old.check("t", json.RawMessage(`{"a":"y"}`)); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("draft-04 schema: %v; want a pattern problem", err)
	}
	if _, err := compileSchema(json.RawMessage(`{"$ref": "https://example.com/remote.json"}`)); err == nil {
		t.Error("a schema with an unresolvable reference compiled")
	}
}

func TestSchemaCachedPerType(t *testing.T) {
	type args struct {
		A string `json:"a"`
	}
	s1, err1 := schemaFor(reflect.TypeFor[args]())
	s2, err2 := schemaFor(reflect.TypeFor[args]())
	if err1 != nil || err2 != nil || s1 != s2 {
		t.Errorf("two inferences of one type: %p, %p (%v, %v); want one cached schema", s1, s2, err1, err2)
	}
	_, e1 := schemaFor(reflect.TypeFor[string]())
	_, e2 := schemaFor(reflect.TypeFor[string]())
	if e1 == nil || e1 != e2 {
		t.Errorf("errors are cached too: %v, %v", e1, e2)
	}
}

func TestPointerPath(t *testing.T) {
	for ptr, want := range map[string]string{
		"":                                 "",
		"root":                             "",
		"/properties/a":                    "a",
		"/properties/a/items/properties/b": "a[].b",
	} {
		if got := pointerPath(ptr); got != want {
			t.Errorf("pointerPath(%q) = %q, want %q", ptr, got, want)
		}
	}
}
