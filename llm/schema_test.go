package llm_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/llm"
)

func TestSchemaForContent(t *testing.T) {
	raw, err := llm.SchemaFor[contractPlan]()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type                 string   `json:"type"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("root: type %q, additionalProperties %v; want a closed object", s.Type, s.AdditionalProperties)
	}
	// Fields without omitempty are required, in declaration order.
	if want := []string{"goal", "priority", "steps", "labels"}; !cmp.Equal(s.Required, want) {
		t.Errorf("required = %v, want %v", s.Required, want)
	}
	for _, want := range []string{
		`"priority":{"type":"string","enum":["low","medium","high"]}`,         // SchemaProvider
		`"steps":{"type":["null","array"]`,                                    // slices may be null
		`"id":{"type":"string","description":"a short unique id such as s1"}`, // jsonschema tag
		`"minutes":{"type":"integer","minimum":-32768,"maximum":32767}`,       // sized integers
		`"labels":{"type":"object","additionalProperties":{"type":"integer"}}`,
		`"owner":{"type":["null","string"]}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("schema lacks %s:\n%s", want, raw)
		}
	}
	// Properties keep declaration order (providers show them in order).
	if i, j := strings.Index(string(raw), `"goal"`), strings.Index(string(raw), `"confidence"`); i > j {
		t.Errorf("properties out of declaration order: %s", raw)
	}
}

func TestSchemaForIsCachedAndCopied(t *testing.T) {
	a, err := llm.SchemaFor[contractPlan]()
	if err != nil {
		t.Fatal(err)
	}
	want := string(a)
	a[0] = 'X' // the caller owns its copy
	b, _ := llm.SchemaFor[contractPlan]()
	if string(b) != want {
		t.Fatalf("a caller's change leaked into the cache: %s", b)
	}
	// Cached: a later call only copies the bytes.
	if n := testing.AllocsPerRun(100, func() { _, _ = llm.SchemaFor[contractPlan]() }); n > 1 {
		t.Errorf("SchemaFor allocates %v times per call, want 1 (the copy)", n)
	}
}

type contractWhen struct {
	At time.Time `json:"at"`
}

func TestSchemaTimeIsDateTime(t *testing.T) {
	raw, _ := llm.SchemaFor[contractWhen]()
	if !strings.Contains(string(raw), `"at":{"type":"string","format":"date-time"}`) {
		t.Errorf("schema = %s", raw)
	}
	v, err := llm.Decode[contractWhen](`{"at":"2025-03-14T15:09:26Z"}`)
	if err != nil || !v.At.Equal(time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)) {
		t.Errorf("Decode = %v, %v", v, err)
	}
	_, err = llm.Decode[contractWhen](`{"at":"next Tuesday"}`)
	derr, _ := errors.AsType[*llm.DecodeError](err)
	if derr == nil || derr.Problems[0].Message != "field `at` must be an RFC 3339 date-time such as \"2025-03-14T15:09:26Z\", got \"next Tuesday\"" {
		t.Errorf("Decode(bad time) = %v", err)
	}
}

// contractCode has a pointer-receiver SchemaProvider with a pattern.
type contractCode string

func (*contractCode) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^[A-Z]{3}$`}
}

// contractChoice uses anyOf, which the checker leaves to jsonschema-go.
type contractChoice struct{}

func (contractChoice) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "integer"}}}
}

func (c *contractChoice) UnmarshalJSON([]byte) error { return nil }

type contractCustom struct {
	Code   contractCode   `json:"code" jsonschema:"an airport code"`
	Choice contractChoice `json:"choice"`
}

func TestSchemaProviders(t *testing.T) {
	raw, err := llm.SchemaFor[contractCustom]()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"code":{"type":"string","description":"an airport code","pattern":"^[A-Z]{3}$"}`) {
		t.Errorf("schema = %s", raw)
	}
	if _, err := llm.Decode[contractCustom](`{"code":"LIS","choice":3}`); err != nil {
		t.Errorf("valid value rejected: %v", err)
	}
	_, err = llm.Decode[contractCustom](`{"code":"lisbon","choice":3}`)
	derr, _ := errors.AsType[*llm.DecodeError](err)
	if derr == nil || derr.Problems[0].Message != "field `code` must match the regular expression \"^[A-Z]{3}$\", got \"lisbon\"" {
		t.Errorf("pattern: %v", err)
	}
	// The checker does not cover anyOf; jsonschema-go's verdict is used.
	_, err = llm.Decode[contractCustom](`{"code":"LIS","choice":true}`)
	derr, _ = errors.AsType[*llm.DecodeError](err)
	if derr == nil || !strings.HasPrefix(derr.Problems[0].Message, "the JSON does not match the schema: anyOf") ||
		!strings.Contains(derr.Problems[0].Message, "/properties/choice") {
		t.Errorf("anyOf: %v", err)
	}
}

type contractBroken struct {
	Ch chan int `json:"ch"`
}

type contractPanics string

func (contractPanics) JSONSchema() *jsonschema.Schema { panic("no schema today") }

func TestSchemaErrors(t *testing.T) {
	_, err := llm.SchemaFor[contractBroken]()
	if err == nil || !strings.Contains(err.Error(), "llm_test.contractBroken") || !strings.Contains(err.Error(), "chan int") {
		t.Errorf("SchemaFor(chan field) = %v, want an error naming the type and the field's type", err)
	}
	_, err = llm.Decode[contractBroken](`{}`)
	if _, isDecode := errors.AsType[*llm.DecodeError](err); err == nil || isDecode {
		t.Errorf("Decode of a type without schema = %v, want a plain error", err)
	}
	_, err = llm.SchemaFor[[]contractPanics]()
	if err == nil || !strings.Contains(err.Error(), "no schema today") {
		t.Errorf("SchemaFor(panicking provider) = %v", err)
	}
}

type (
	contractSize  int
	contractScore float64
	contractName  string
	contractTags  []string
	contractKind  string
)

func (contractSize) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Enum: []any{1, 2, 3}}
}

func (contractScore) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "number", ExclusiveMinimum: jsonschema.Ptr(0.0), ExclusiveMaximum: jsonschema.Ptr(1.0), MultipleOf: jsonschema.Ptr(0.25)}
}

func (contractName) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(2), MaxLength: jsonschema.Ptr(5)}
}

func (contractTags) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(2)}
}

func (contractKind) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Const: jsonschema.Ptr[any]("v1")}
}

type contractLimits struct {
	Size  contractSize  `json:"size"`
	Pair  [2]int        `json:"pair"`
	Score contractScore `json:"score"`
	Name  contractName  `json:"name"`
	Tags  contractTags  `json:"tags"`
	Kind  contractKind  `json:"kind"`
}

func TestSchemaKeywordsTheCheckerCovers(t *testing.T) {
	good := `{"size":2,"pair":[1,2],"score":0.75,"name":"kim","tags":["a"],"kind":"v1"}`
	if _, err := llm.Decode[contractLimits](good); err != nil {
		t.Fatalf("valid value rejected: %v", err)
	}
	cases := map[string]string{
		`{"size":4,"pair":[1,2],"score":0.75,"name":"kim","tags":["a"],"kind":"v1"}`:         "field `size` must be one of 1, 2, 3, got 4",
		`{"size":2,"pair":[1],"score":0.75,"name":"kim","tags":["a"],"kind":"v1"}`:           "field `pair` must have exactly 2 items, got 1",
		`{"size":2,"pair":[1,2],"score":1,"name":"kim","tags":["a"],"kind":"v1"}`:            "field `score` must be less than 1, got 1",
		`{"size":2,"pair":[1,2],"score":0,"name":"kim","tags":["a"],"kind":"v1"}`:            "field `score` must be greater than 0, got 0",
		`{"size":2,"pair":[1,2],"score":0.3,"name":"kim","tags":["a"],"kind":"v1"}`:          "field `score` must be a multiple of 0.25, got 0.3",
		`{"size":2,"pair":[1,2],"score":0.75,"name":"k","tags":["a"],"kind":"v1"}`:           "field `name` must be at least 2 characters long, got 1",
		`{"size":2,"pair":[1,2],"score":0.75,"name":"kimberly","tags":["a"],"kind":"v1"}`:    "field `name` must be at most 5 characters long, got 8",
		`{"size":2,"pair":[1,2],"score":0.75,"name":"kim","tags":[],"kind":"v1"}`:            "field `tags` must have at least 1 item, got 0",
		`{"size":2,"pair":[1,2],"score":0.75,"name":"kim","tags":["a","b","c"],"kind":"v1"}`: "field `tags` must have at most 2 items, got 3",
		`{"size":2,"pair":[1,2],"score":0.75,"name":"kim","tags":["a"],"kind":"v2"}`:         "field `kind` must be \"v1\", got \"v2\"",
	}
	for reply, want := range cases {
		_, err := llm.Decode[contractLimits](reply)
		derr, _ := errors.AsType[*llm.DecodeError](err)
		if derr == nil || len(derr.Problems) != 1 || derr.Problems[0].Message != want {
			t.Errorf("Decode(%s) = %v, want %q", reply, err, want)
		}
	}
	_, err := llm.Decode[contractLimits](`{}`)
	derr, _ := errors.AsType[*llm.DecodeError](err)
	wantShape := `{size: 1|2|3, pair: integer[], score: number, name: string, tags: string[], kind: "v1"}`
	if derr == nil || !strings.HasSuffix(derr.Correction(), "\n"+wantShape) {
		t.Errorf("correction does not end with the shape %s:\n%v", wantShape, derr.Correction())
	}
}

// A json.RawMessage field accepts any JSON value, not the byte array it is
// in Go: an edited tool call's arguments are an object.
func TestSchemaForRawMessage(t *testing.T) {
	type edit struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	raw, err := llm.SchemaFor[edit]()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if a := string(s.Properties["arguments"]); a != "true" && a != "{}" {
		t.Fatalf("arguments schema %s, want true or {} (any JSON)", a)
	}
	if _, err := llm.Decode[edit](`{"arguments": {"path": "a.txt"}}`); err != nil {
		t.Fatalf("an object for a raw field was refused: %v", err)
	}
}
