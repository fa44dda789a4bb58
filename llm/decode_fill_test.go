package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// encodingJSONTree is the tree encoding/json gives, as decode read it
// before parseTree.
func encodingJSONTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

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
// encoding/json's, and that it notes repeated keys.
func TestParseTreeMatchesEncodingJSON(t *testing.T) {
	for _, text := range treeCases {
		got, dup, ok := parseTree(text)
		want, err := encodingJSONTree([]byte(text))
		if !ok || err != nil {
			t.Fatalf("%q: parseTree ok %v, encoding/json error %v", text, ok, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %#v\nwant %#v", text, got, want)
		}
		if wantDup := strings.Contains(text, `"a":1,"a"`) || strings.Contains(text, `\u0061`) || strings.Contains(text, `"k":1,"k"`); dup != wantDup {
			t.Errorf("%q: repeated key noted %v, want %v", text, dup, wantDup)
		}
	}
	for _, bad := range []string{``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, `"\'"`, "\"a\tb\"", `{"a":1}x`, `{"a":1} {}`, `{1:2}`} {
		if _, _, ok := parseTree(bad); ok {
			t.Errorf("parseTree accepted %q", bad)
		}
	}
	// Nesting: encoding/json's limit, exactly.
	for _, depth := range []int{maxTreeDepth, maxTreeDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			text := strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth)
			if _, _, ok := parseTree(text); ok != json.Valid([]byte(text)) {
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
		got, _, ok := parseTree(string(data))
		if valid := json.Valid(data); ok != valid {
			t.Fatalf("%q: parseTree ok %v, json.Valid %v", data, ok, valid)
		}
		if !ok {
			return
		}
		want, err := encodingJSONTree(data)
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
	})
}

type fillName string

type fillInner struct {
	X int      `json:"x"`
	Y []string `json:"y,omitempty"`
	Z *float32
}

// fillAll has a field of every kind the filler handles.
type fillAll struct {
	B     bool
	S     string `json:"s"`
	I8    int8   `json:"i8,omitempty"`
	U16   uint16
	F32   float32
	F64   float64 `json:"f64,omitzero"`
	N     json.Number
	P     *int
	PP    **string
	Arr   [2]int
	Sl    []string
	Bytes []byte
	M     map[string]*fillInner
	MN    map[fillName]fillName
	Named fillName
	Any   any
	Inner fillInner
	IP    *fillInner
	Skip  string `json:"-"`
	//lint:ignore SA5008 encoding/json names this field "-", which the filler must do too
	Dash string `json:"-,"`
	//lint:ignore SA5008 encoding/json names a field with an invalid tag name after the Go field
	BadTag string `json:"a\"b"`
	Empty  string `json:",omitempty"`
	//lint:ignore U1000 an unexported field, which encoding/json never sets
	hidden int
}

var fillKeys = []string{"B", "b", "s", "S", "i8", "U16", "u16", "F32", "f64", "N", "P", "PP", "Arr", "Sl", "Bytes",
	"M", "MN", "Named", "Any", "Inner", "IP", "x", "y", "Z", "X", "Skip", "-", "Dash", "BadTag", "a\"b", "Empty",
	"hidden", "other", "ſ"}

var fillNumbers = []string{"0", "-0", "1", "-1", "1.5", "-2.25e1", "1e2", "127", "128", "-129", "65535", "65536",
	"3.5e38", "3.5e39", "1e400", "9007199254740993", "18446744073709551615", "18446744073709551616"}

var fillStrings = []string{"", "x", "é", "aGk=", "not base64!", "12", "1e3"}

// randomJSON writes a random JSON value, objects keyed from fillKeys.
func randomJSON(r *rand.Rand, b *strings.Builder, depth int) {
	n := 7
	if depth > 3 {
		n = 5 // no more arrays or objects
	}
	switch r.IntN(n) {
	case 0:
		b.WriteString("null")
	case 1:
		b.WriteString([]string{"true", "false"}[r.IntN(2)])
	case 2, 3:
		b.WriteString(fillNumbers[r.IntN(len(fillNumbers))])
	case 4:
		s, _ := json.Marshal(fillStrings[r.IntN(len(fillStrings))])
		b.Write(s)
	case 5:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			randomJSON(r, b, depth+1)
		}
		b.WriteByte(']')
	case 6:
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(fillKeys[r.IntN(len(fillKeys))])
			b.Write(k)
			b.WriteByte(':')
			randomJSON(r, b, depth+1)
		}
		b.WriteByte('}')
	}
}

// checkFill fills a new T from text and, when the filler takes it,
// compares the value with json.Unmarshal's. It reports whether the filler
// took it.
func checkFill[T any](t *testing.T, text string) bool {
	t.Helper()
	fill := filler(reflect.TypeFor[T]())
	if fill == nil {
		t.Fatalf("no filler for %v", reflect.TypeFor[T]())
	}
	tree, dup, ok := parseTree(text)
	if !ok || dup {
		return false
	}
	var got T
	if !fill(tree, reflect.ValueOf(&got).Elem()) {
		return false
	}
	var want T
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		t.Fatalf("filled %s into %T, but json.Unmarshal fails: %v", text, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s into %T:\n filled %#v\n    json %#v", text, got, got, want)
	}
	return true
}

// TestFillMatchesUnmarshal fills random JSON into types of every kind the
// filler handles: whatever it takes must come out as json.Unmarshal makes
// it, and it must take a fair share (the rest goes to json.Unmarshal).
func TestFillMatchesUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	took := map[string]int{}
	const trials = 30000
	for range trials {
		var b strings.Builder
		if r.IntN(4) > 0 {
			b.WriteByte('{') // mostly objects of known keys, so that fields fill
			for i := range 1 + r.IntN(4) {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(fillKeys[r.IntN(len(fillKeys))])
				b.Write(k)
				b.WriteByte(':')
				randomJSON(r, &b, 1)
			}
			b.WriteByte('}')
		} else {
			randomJSON(r, &b, 0)
		}
		text := b.String()
		for name, ok := range map[string]bool{
			"struct":     checkFill[fillAll](t, text),
			"*struct":    checkFill[*fillAll](t, text),
			"map":        checkFill[map[string]any](t, text),
			"any":        checkFill[any](t, text),
			"[]*inner":   checkFill[[]*fillInner](t, text),
			"map[name]S": checkFill[map[fillName][]fillName](t, text),
		} {
			if ok {
				took[name]++
			}
		}
	}
	for name, n := range took {
		if n < trials/50 {
			t.Errorf("%s: the filler took %d of %d values", name, n, trials)
		}
	}
	if len(took) != 6 {
		t.Errorf("the filler took values for %v only", took)
	}
}

// TestFillTakesWellFormedValues checks that values as models send them
// are filled, not left to json.Unmarshal.
func TestFillTakesWellFormedValues(t *testing.T) {
	if !checkFill[fillAll](t, `{"B":true,"s":"x","i8":-3,"U16":9,"F32":1.5,"f64":2,"N":12.50,"P":null,"PP":"p",
		"Arr":[1],"Sl":[],"Bytes":[1,2],"M":{"a":{"x":1,"y":["q"],"Z":null},"b":null},"MN":{"k":"v"},"Named":"n",
		"Any":{"a":[1,"b",null,true]},"Inner":{"x":2},"IP":{"x":3},"-":"dash","BadTag":"bad","Empty":"e"}`) {
		t.Error("a well-formed fillAll was left to json.Unmarshal")
	}
	if !checkFill[[]*fillInner](t, `[{"x":1},null,{"y":[]}]`) {
		t.Error("a well-formed []*fillInner was left to json.Unmarshal")
	}
}

// TestFillLeavesToEncodingJSON lists what the filler does not try: what
// encoding/json decodes by other rules, and values it would reject or
// match by case folding.
func TestFillLeavesToEncodingJSON(t *testing.T) {
	type embedded struct{ fillInner }
	type quoted struct {
		N int `json:"n,string"`
	}
	type twice struct {
		A string `json:"B"` // takes B's name
		B string
	}
	type stamped struct{ At time.Time }
	type raw struct{ R json.RawMessage }
	type stringer struct{ S fmt.Stringer }
	for _, typ := range []reflect.Type{
		reflect.TypeFor[embedded](), reflect.TypeFor[quoted](), reflect.TypeFor[twice](),
		reflect.TypeFor[stamped](), reflect.TypeFor[raw](), reflect.TypeFor[stringer](),
		reflect.TypeFor[map[int]string](), reflect.TypeFor[[]complex128](), reflect.TypeFor[time.Time](),
	} {
		if filler(typ) != nil {
			t.Errorf("%v has a filler", typ)
		}
	}
	for _, text := range []string{
		`{"S":"case-folded key"}`, `{"other":1}`, `{"hidden":1}`, `{"Skip":"x"}`, `{"i8":128}`, `{"U16":-1}`,
		`{"F32":3.5e39}`, `{"Bytes":"aGk="}`, `{"N":"12"}`, `{"s":1}`, `{"Arr":{}}`, `{"Any":1e400}`,
	} {
		if checkFill[fillAll](t, text) {
			t.Errorf("%s was filled, not left to json.Unmarshal", text)
		}
	}
}
