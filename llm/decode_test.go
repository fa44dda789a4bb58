package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/llm"
)

// contractPriority is an enum through SchemaProvider.
type contractPriority string

func (contractPriority) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"low", "medium", "high"}}
}

type contractStep struct {
	ID        string   `json:"id" jsonschema:"a short unique id such as s1"`
	Title     string   `json:"title"`
	DependsOn []string `json:"depends_on"`
	Minutes   int16    `json:"minutes"`
}

// contractPlan is the realistic contract most tests use. Its slices and
// maps have no omitempty so that decode → encode → decode is exact.
type contractPlan struct {
	Goal       string           `json:"goal"`
	Priority   contractPriority `json:"priority"`
	Steps      []contractStep   `json:"steps"`
	Labels     map[string]int   `json:"labels"`
	Owner      *string          `json:"owner,omitempty"`
	Confidence float64          `json:"confidence,omitempty"`
}

const contractGoodPlan = `{"goal":"ship","priority":"high","steps":[{"id":"s1","title":"build","depends_on":[],"minutes":5}],"labels":{"team":1}}`

func contractWantPlan() contractPlan {
	return contractPlan{
		Goal: "ship", Priority: "high", Labels: map[string]int{"team": 1},
		Steps: []contractStep{{ID: "s1", Title: "build", DependsOn: []string{}, Minutes: 5}},
	}
}

func TestDecodeFindsTheObject(t *testing.T) {
	tricky := `{"goal":"use {braces} and \"quotes\" \\ }{","priority":"low","steps":[],"labels":{"a{b}":2}}`
	cases := []struct {
		name, reply string
		want        contractPlan
	}{
		{"bare", contractGoodPlan, contractWantPlan()},
		{"prose around", "Here is the plan you asked for:\n" + contractGoodPlan + "\nLet me know if you need changes.", contractWantPlan()},
		{"json fence", "Sure.\n```json\n" + contractGoodPlan + "\n```\nDone.", contractWantPlan()},
		{"bare fence", "Sure.\n```\n" + contractGoodPlan + "\n```", contractWantPlan()},
		{"JSON fence beats an earlier bare object", `An example: {"goal":"example"}` + "\n```JSON\n" + contractGoodPlan + "\n```", contractWantPlan()},
		{"json fence beats an earlier bare fence", "```\n{\"x\":1}\n```\n```json\n" + contractGoodPlan + "\n```", contractWantPlan()},
		{"braces and escaped quotes in strings", "The plan: " + tricky + " (braces inside strings are fine)",
			contractPlan{Goal: `use {braces} and "quotes" \ }{`, Priority: "low", Steps: []contractStep{}, Labels: map[string]int{"a{b}": 2}}},
		{"array before the object is skipped", `Ranked: [{"goal":"no"}] and the plan ` + contractGoodPlan, contractWantPlan()},
		{"nested arrays of objects", `{"goal":"g","priority":"medium","steps":[{"id":"a","title":"t","depends_on":null,"minutes":1},{"id":"b","title":"u","depends_on":["a"],"minutes":-2}],"labels":{},"owner":"kim","confidence":0.5}`,
			contractPlan{Goal: "g", Priority: "medium", Owner: contractPtr("kim"), Confidence: 0.5, Labels: map[string]int{}, Steps: []contractStep{
				{ID: "a", Title: "t", Minutes: 1}, {ID: "b", Title: "u", DependsOn: []string{"a"}, Minutes: -2}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := llm.Decode[contractPlan](tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func contractPtr[T any](v T) *T { return &v }

// TestDecodeFirstObjectWins documents the choice among several bare
// objects: the first valid one, even when it is not the wanted shape.
func TestDecodeFirstObjectWins(t *testing.T) {
	_, err := llm.Decode[contractPlan](`For example {"goal":"x"} would be wrong; the answer: ` + contractGoodPlan)
	derr, ok := errors.AsType[*llm.DecodeError](err)
	if !ok {
		t.Fatalf("err = %v, want a *DecodeError about the first object", err)
	}
	if derr.Problems[0].Message != "field `priority` is required" {
		t.Errorf("problems = %v", derr.Problems)
	}
}

func TestDecodeProblems(t *testing.T) {
	step := func(id string) string {
		return fmt.Sprintf(`{"id":%q,"title":"t","depends_on":[],"minutes":1}`, id)
	}
	cases := []struct {
		name, reply string
		want        []llm.Problem
	}{
		{"missing nested field",
			`{"goal":"g","priority":"low","labels":{},"steps":[` + step("a") + `,` + step("b") + `,{"title":"t","depends_on":[],"minutes":1}]}`,
			[]llm.Problem{{Path: "steps[2].id", Message: "field `steps[2].id` is required"}}},
		{"missing top-level fields",
			`{"goal":"g"}`,
			[]llm.Problem{
				{Path: "priority", Message: "field `priority` is required"},
				{Path: "steps", Message: "field `steps` is required"},
				{Path: "labels", Message: "field `labels` is required"}}},
		{"enum",
			`{"goal":"g","priority":"urgent","steps":[],"labels":{}}`,
			[]llm.Problem{{Path: "priority", Message: "field `priority` must be one of \"low\", \"medium\", \"high\", got \"urgent\""}}},
		{"unknown fields, sorted, with the allowed ones",
			`{"goal":"g","priority":"low","steps":[],"labels":{},"zeta":1,"alpha":2}`,
			[]llm.Problem{
				{Path: "alpha", Message: "unknown field `alpha` (the allowed fields are `goal`, `priority`, `steps`, `labels`, `owner`, `confidence`)"},
				{Path: "zeta", Message: "unknown field `zeta` (the allowed fields are `goal`, `priority`, `steps`, `labels`, `owner`, `confidence`)"}}},
		{"wrong case",
			`{"Goal":"g","priority":"low","steps":[],"labels":{}}`,
			[]llm.Problem{
				{Path: "goal", Message: "field `goal` is required"},
				{Path: "Goal", Message: "unknown field `Goal` (did you mean `goal`?)"}}},
		{"mistyped values",
			`{"goal":7,"priority":"low","steps":[{"id":"a","title":null,"depends_on":"a","minutes":"5"}],"labels":{"a b":1.5},"confidence":"high"}`,
			[]llm.Problem{
				{Path: "goal", Message: "field `goal` must be a string, got the number 7"},
				{Path: "steps[0].title", Message: "field `steps[0].title` must be a string, got null"},
				{Path: "steps[0].depends_on", Message: "field `steps[0].depends_on` must be an array or null, got the string \"a\""},
				{Path: "steps[0].minutes", Message: "field `steps[0].minutes` must be an integer (no fraction or exponent), got the string \"5\""},
				{Path: `labels["a b"]`, Message: "field `labels[\"a b\"]` must be an integer (no fraction or exponent), got the number 1.5"},
				{Path: "confidence", Message: "field `confidence` must be a number, got the string \"high\""}}},
		{"integer written as a float, and out of range",
			`{"goal":"g","priority":"low","steps":[{"id":"a","title":"t","depends_on":[],"minutes":3.0},{"id":"b","title":"t","depends_on":[],"minutes":40000}],"labels":{}}`,
			[]llm.Problem{
				{Path: "steps[0].minutes", Message: "field `steps[0].minutes` must be an integer (no fraction or exponent), got the number 3.0"},
				{Path: "steps[1].minutes", Message: "field `steps[1].minutes` must be at most 32767, got 40000"}}},
		{"wrong containers",
			`{"goal":"g","priority":"low","steps":{"id":"a"},"labels":null}`,
			[]llm.Problem{
				{Path: "steps", Message: "field `steps` must be an array or null, got an object"},
				{Path: "labels", Message: "field `labels` must be an object, got null"}}},
		{"no JSON at all", "I am sorry, I cannot make a plan.",
			[]llm.Problem{{Message: "no JSON object found in the reply: it contains no '{'; reply with a JSON object"}}},
		{"a JSON string", ` "ship it" `,
			[]llm.Problem{{Message: "the reply is a JSON string (\"ship it\"), but a JSON object {...} is required"}}},
		{"a JSON number", `42`,
			[]llm.Problem{{Message: "the reply is the JSON number 42, but a JSON object {...} is required"}}},
		{"a JSON array", `[{"goal":"g"}]`,
			[]llm.Problem{{Message: "the reply is a JSON array, but a JSON object {...} is required"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := llm.Decode[contractPlan](tc.reply)
			derr, ok := errors.AsType[*llm.DecodeError](err)
			if !ok {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			if !reflect.ValueOf(v).IsZero() {
				t.Errorf("value = %+v, want the zero value on error", v)
			}
			if derr.Reply != tc.reply {
				t.Errorf("Reply = %q, want the reply as given", derr.Reply)
			}
			if diff := cmp.Diff(tc.want, derr.Problems); diff != "" {
				t.Errorf("problems -want +got:\n%s", diff)
			}
			for _, p := range tc.want {
				if !strings.Contains(err.Error(), p.Message) {
					t.Errorf("Error() = %q, want it to include %q", err, p.Message)
				}
			}
		})
	}
}

func TestDecodeInvalidOrTruncatedJSON(t *testing.T) {
	cases := map[string][]string{
		"Plan:\n```json\n{\"goal\": \"g\",}\n```": {"not valid JSON", "near byte offset"},
		`{"goal": "g", "steps": [`:                {"never closed", "cut off"},
	}
	for reply, wants := range cases {
		_, err := llm.Decode[contractPlan](reply)
		derr, ok := errors.AsType[*llm.DecodeError](err)
		if !ok || len(derr.Problems) != 1 {
			t.Fatalf("Decode(%q) = %v, want one problem", reply, err)
		}
		for _, w := range wants {
			if !strings.Contains(derr.Problems[0].Message, w) {
				t.Errorf("Decode(%q): %q does not say %q", reply, derr.Problems[0].Message, w)
			}
		}
	}
}

func TestDecodeCapsTheProblemList(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"goal":"g","priority":"low","labels":{},"steps":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"title":"t","depends_on":[],"minutes":1}`)
	}
	b.WriteString("]}")
	_, err := llm.Decode[contractPlan](b.String())
	derr, _ := errors.AsType[*llm.DecodeError](err)
	if derr == nil || len(derr.Problems) != 21 {
		t.Fatalf("err = %v, want 20 problems and a last one saying there are more", err)
	}
	if got := derr.Problems[20].Message; got != "there are more problems; fix these first" {
		t.Errorf("last problem = %q", got)
	}
}

type contractCounter struct {
	N int64  `json:"n"`
	U uint64 `json:"u"`
}

func TestDecodeWordsUnmarshalErrors(t *testing.T) {
	cases := map[string]string{
		`{"n": 9223372036854775808, "u": 0}`:  "field `n` must be an integer from -9223372036854775808 to 9223372036854775807, got number 9223372036854775808",
		`{"n": 0, "u": 18446744073709551616}`: "field `u` must be an integer from 0 to 18446744073709551615, got number 18446744073709551616",
	}
	for reply, want := range cases {
		_, err := llm.Decode[contractCounter](reply)
		derr, _ := errors.AsType[*llm.DecodeError](err)
		if derr == nil || len(derr.Problems) != 1 || derr.Problems[0].Message != want {
			t.Errorf("Decode(%s) = %v, want %q", reply, err, want)
		}
	}
}

func TestDecodeNonObjectTypes(t *testing.T) {
	list, err := llm.Decode[[]string]("The tags are [\"a\", \"b]\"] as requested.")
	if err != nil || !cmp.Equal(list, []string{"a", "b]"}) {
		t.Errorf("Decode[[]string] = %q, %v", list, err)
	}
	anyObj, err := llm.Decode[map[string]any](`Result: {"a": [1, {"b": null}]} as asked`)
	if want := map[string]any{"a": []any{1.0, map[string]any{"b": nil}}}; err != nil || !cmp.Equal(anyObj, want) {
		t.Errorf("Decode[map[string]any] = %v, %v", anyObj, err)
	}
	n, err := llm.Decode[int]("```\n42\n```")
	if err != nil || n != 42 {
		t.Errorf("Decode[int] from a fence = %d, %v", n, err)
	}
	_, err = llm.Decode[int]("forty-two")
	derr, _ := errors.AsType[*llm.DecodeError](err)
	if derr == nil || derr.Problems[0].Message != "no valid JSON found in the reply; reply with only the JSON value (an integer (no fraction or exponent))" {
		t.Errorf("Decode[int](prose) = %v", err)
	}
	_, err = llm.Decode[[]int](`[1, "2"]`)
	if derr, _ := errors.AsType[*llm.DecodeError](err); derr == nil || derr.Problems[0].Message != "field `[1]` must be an integer (no fraction or exponent), got the string \"2\"" {
		t.Errorf("Decode[[]int] = %v", err)
	}
	if !strings.Contains(derr.Correction(), "only the corrected JSON value") {
		t.Errorf("correction for a non-object type: %q", derr.Correction())
	}
}

func TestDecodeCorrectionText(t *testing.T) {
	_, err := llm.Decode[contractPlan](`{"goal":"g","priority":"now","steps":[],"labels":{}}`)
	derr, _ := errors.AsType[*llm.DecodeError](err)
	want := "Your reply could not be used:\n" +
		"- field `priority` must be one of \"low\", \"medium\", \"high\", got \"now\"\n" +
		"Reply again with only the corrected JSON object, with no other text and no code fences. " +
		"It must have this shape (a field marked ? may be left out):\n" +
		`{goal: string, priority: "low"|"medium"|"high", steps: {id: string, title: string, depends_on: string[], minutes: integer}[], labels: {[key: string]: integer}, owner?: string, confidence?: number}`
	if derr == nil || derr.Correction() != want {
		t.Fatalf("correction:\n%v\nwant:\n%s", derr.Correction(), want)
	}
}

// FuzzDecode checks that Decode never panics, fails only with a
// *DecodeError whose problems are worded, and that a decoded value
// survives encode → decode unchanged. Seeds are in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, reply string) {
		contractRoundTrip[contractPlan](t, reply)
		contractRoundTrip[[]contractStep](t, reply)
	})
}

func contractRoundTrip[T any](t *testing.T, reply string) {
	v, err := llm.Decode[T](reply)
	if err != nil {
		derr, ok := errors.AsType[*llm.DecodeError](err)
		if !ok || len(derr.Problems) == 0 || len(derr.Problems) > 21 {
			t.Fatalf("Decode[%T] error %#v, want a *DecodeError with 1 to 21 problems", v, err)
		}
		for _, p := range derr.Problems {
			if p.Message == "" {
				t.Fatalf("empty problem in %v", derr.Problems)
			}
		}
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encoding %#v: %v", v, err)
	}
	again, err := llm.Decode[T](string(b))
	if err != nil {
		t.Fatalf("decoding the re-encoded %s: %v", b, err)
	}
	if !reflect.DeepEqual(v, again) {
		t.Fatalf("round trip changed the value:\n%#v\n%#v", v, again)
	}
}

// BenchmarkDecode4KB decodes a ~4 KB reply: prose and a fenced plan.
func BenchmarkDecode4KB(b *testing.B) {
	reply := contractBenchReply()
	if n := len(reply); n < 3800 || n > 4400 {
		b.Fatalf("reply is %d bytes, want about 4 KB", n)
	}
	if _, err := llm.Decode[contractPlan](reply); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Decode[contractPlan](reply); err != nil {
			b.Fatal(err)
		}
	}
}

func contractBenchReply() string {
	p := contractPlan{Goal: "Migrate the billing service to the new payments API without downtime", Priority: "high",
		Labels: map[string]int{"team": 4, "quarter": 3, "risk": 2}, Owner: contractPtr("kim"), Confidence: 0.8}
	for i := range 20 {
		s := contractStep{ID: fmt.Sprintf("s%d", i+1), Title: fmt.Sprintf("Step %d: update the {client} for endpoint %d and verify \"idempotency\"", i+1, i), Minutes: int16(15 + i)}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i)}
		} else {
			s.DependsOn = []string{}
		}
		p.Steps = append(p.Steps, s)
	}
	obj, _ := json.MarshalIndent(p, "", "  ")
	return "I looked at the service and its dependencies. Here is a plan that keeps the old API running until the new one is verified; each step is small enough to roll back.\n\n```json\n" +
		string(obj) + "\n```\n\nThe riskiest part is step 12 (the {webhook} switch); I would schedule it outside peak hours."
}
