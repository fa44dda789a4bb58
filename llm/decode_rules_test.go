package llm_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/llm"
)

// decodesLikeUnmarshal checks that Decode[T] of reply gives what
// json.Unmarshal gives for body, the JSON in it.
func decodesLikeUnmarshal[T any](t *testing.T, reply, body string) T {
	t.Helper()
	got, err := llm.Decode[T](reply)
	if err != nil {
		t.Fatalf("Decode[%T](%s): %v", got, reply, err)
	}
	var want T
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode[%T](%s) differs from json.Unmarshal:\n got %#v\nwant %#v", got, reply, got, want)
	}
	return got
}

// TestDecodeRepeatedKeysAsEncodingJSON: encoding/json merges an object's
// repeated key into one map (or struct); Decode keeps that.
func TestDecodeRepeatedKeysAsEncodingJSON(t *testing.T) {
	body := `{"goal":"g","priority":"low","steps":[],"labels":{"a":1},"labels":{"b":2}}`
	p := decodesLikeUnmarshal[contractPlan](t, "Plan:\n"+body, body)
	if len(p.Labels) != 2 {
		t.Errorf("labels %v, want both objects' entries", p.Labels)
	}
}

// looseRecord's schema allows any object, so keys in another case (which
// encoding/json matches to fields by case folding) and unknown keys pass
// the check.
type looseRecord struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags"`
}

func (looseRecord) JSONSchema() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

func TestDecodeCaseFoldedAndUnknownKeysAsEncodingJSON(t *testing.T) {
	body := `{"NAME":"n","Count":2,"tags":["a"],"extra":{"x":1}}`
	r := decodesLikeUnmarshal[looseRecord](t, body, body)
	if r.Name != "n" || r.Count != 2 {
		t.Errorf("case-folded keys were not matched: %+v", r)
	}
}

type upperText string

func (u *upperText) UnmarshalText(b []byte) error {
	*u = upperText(strings.ToUpper(string(b)))
	return nil
}

type doubled int

func (d *doubled) UnmarshalJSON(b []byte) error {
	var n int
	err := json.Unmarshal(b, &n)
	*d = doubled(2 * n)
	return err
}

type ruleBase struct {
	Base string `json:"base"`
}

// ruleMix holds what encoding/json decodes by its own rules: methods,
// embedded fields, time.Time, raw JSON.
type ruleMix struct {
	ruleBase
	Text  upperText       `json:"text"`
	Twice doubled         `json:"twice"`
	At    time.Time       `json:"at"`
	Raw   json.RawMessage `json:"raw"`
}

func TestDecodeOwnRulesAsEncodingJSON(t *testing.T) {
	body := `{"base":"b","text":"shout","twice":21,"at":"2025-03-14T15:09:26Z","raw":{"k":[1, 2]}}`
	m := decodesLikeUnmarshal[ruleMix](t, "```json\n"+body+"\n```", body)
	if m.Base != "b" || m.Text != "SHOUT" || m.Twice != 42 {
		t.Errorf("decoded %+v", m)
	}
}

// TestDecodeStringsAsEncodingJSON: escapes, surrogate pairs, lone
// surrogates and invalid UTF-8 come out as encoding/json makes them.
func TestDecodeStringsAsEncodingJSON(t *testing.T) {
	body := "{\"goal\":\"line\\nbreak \\\"q\\\" \\u00e9 \\ud83d\\ude00 lone \\ud800 bad \xff\",\"priority\":\"high\"," +
		"\"steps\":[{\"id\":\"s\\u0031\",\"title\":\"\\t\",\"depends_on\":null,\"minutes\":-0}],\"labels\":{\"\\u0061\":1}}"
	decodesLikeUnmarshal[contractPlan](t, body, body)
	decodesLikeUnmarshal[map[string]any](t, body, body)
	decodesLikeUnmarshal[*contractPlan](t, body, body)
}

// TestDecodeBenchPlanAsEncodingJSON decodes BenchmarkDecode4KB's reply.
func TestDecodeBenchPlanAsEncodingJSON(t *testing.T) {
	reply := contractBenchReply()
	body := reply[strings.Index(reply, "```json\n")+8 : strings.LastIndex(reply, "\n```")]
	decodesLikeUnmarshal[contractPlan](t, reply, body)
}
