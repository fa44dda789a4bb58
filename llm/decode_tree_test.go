package llm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

var treeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `-12.5e+3`, `1E-2`, `""`,
	` { "a" : [ 1 , 2.0 , "x" , null , { } , [ ] ] , "b" : { "c" : false } } `,
	`"tab\tnew\nline \"quoted\" back\\slash \/ \b\f\r"`,
	`"\u00e9\u4e2d\uD83D\uDE00 plain é 中 😀"`,
	`"lone \ud800 high, lone \udc00 low, reversed \udc00\ud800, high then text \ud800x"`,
	`"high then escape \ud800\n and high then non-surrogate \ud800\u0041"`,
	"\"invalid utf-8 \xff\xfe and a cut rune \xe4\xb8 and a surrogate \xed\xa0\x80\"",
	"\"invalid utf-8 with an escape \xff\\n\"",
	`"\u0000 nul"`,
	`{"a":1,"a":2}`, `{"a":{"x":1},"\u0061":{"y":2}}`, `[{"k":1,"k":[2]}]`,
	`{"deep":[[[[[[[[[[{"x":[1]}]]]]]]]]]]}`,
}

// TestParseTreeMatchesEncodingJSON checks the tree parseTree reads against
// encoding/json's (a repeated key's later value wins in both), and that it
// refuses what json.Valid refuses.
func TestParseTreeMatchesEncodingJSON(t *testing.T) {
	for _, text := range treeCases {
		got, ok := parseTree(text)
		want, err := jsonmatch.Decode([]byte(text))
		if !ok || err != nil {
			t.Fatalf("%q: parseTree ok %v, encoding/json error %v", text, ok, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %#v\nwant %#v", text, got, want)
		}
	}
	for _, bad := range []string{``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\'"`, "\"a\tb\"", `{"a":1}x`, `{"a":1} {}`, `{1:2}`} {
		if _, ok := parseTree(bad); ok {
			t.Errorf("parseTree accepted %q", bad)
		}
	}
	// Nesting: encoding/json's limit, exactly.
	for _, depth := range []int{maxTreeDepth, maxTreeDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			text := strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth)
			if _, ok := parseTree(text); ok != json.Valid([]byte(text)) {
				t.Errorf("%d levels of %s: parseTree ok %v, json.Valid the opposite", depth, open, ok)
			}
		}
	}
}

// FuzzParseTree checks that parseTree accepts exactly what json.Valid
// accepts and reads the same tree as encoding/json.
func FuzzParseTree(f *testing.F) {
	for _, c := range treeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := parseTree(string(data))
		if valid := json.Valid(data); ok != valid {
			t.Fatalf("%q: parseTree ok %v, json.Valid %v", data, ok, valid)
		}
		if !ok {
			return
		}
		want, err := jsonmatch.Decode(data)
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
	})
}
