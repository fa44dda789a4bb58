package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type fillInner struct {
	ID    string   `json:"id"`
	Score float64  `json:"score"`
	Tags  []string `json:"tags,omitempty"`
	Sub   *fillLeaf
}

type fillLeaf struct{ V *int }

type fillOuter struct {
	Name    string               `json:"name"`
	Count   int8                 `json:"count"`
	Size    uint16               `json:"size"`
	Ratio   float32              `json:"ratio"`
	OK      bool                 `json:"ok"`
	Items   []fillInner          `json:"items"`
	ByKey   map[string]fillInner `json:"by_key"`
	Ptr     *int                 `json:"ptr"`
	Skipped string               `json:"-"`
	Plain   string
}

// TestFillMatchesUnmarshal fills plain types from the tree Decode checks and
// compares with json.Unmarshal of the same text: wherever the fill claims a
// result it must be encoding/json's, and where encoding/json fails the
// fill must give up (Decode then reports encoding/json's error).
func TestFillMatchesUnmarshal(t *testing.T) {
	inputs := []string{
		`{"name":"a","count":3,"size":7,"ratio":0.5,"ok":true,"items":[{"id":"x","score":1e2,"tags":["t"]}],"by_key":{"k":{"id":"y"}},"ptr":4,"Plain":"p"}`,
		`{"NAME":"upper","Count":-128,"plain":"folded"}`,
		`{"name":"a","Name":"b"}`,                      // two keys, one field: order decides
		`{"items":[{"id":"a"}],"items":[{"score":2}]}`, // duplicate key: encoding/json's own handling
		`{"by_key":{"k":{"id":"a"},"k":{"score":1}}}`,
		`{"count":128}`, `{"count":1.0}`, `{"count":"1"}`, `{"size":-1}`, `{"size":65536}`,
		`{"ratio":1e39}`, `{"ok":"true"}`, `{"items":{}}`, `{"by_key":[]}`, `{"name":3}`,
		`{"name":null,"count":null,"items":null,"by_key":null,"ptr":null}`,
		`{"items":[],"by_key":{}}`, `{"items":[null,{"Sub":{"V":1}},{"sub":{"v":null}}]}`,
		`{"unknown":{"deep":[1,2,{"a":"b"}]},"name":"kept"}`,
		`{"ſkipped":"s","name":"x"}`, `{"Ｎame":"wide"}`, `{"-":"dash"}`,
		`{"name":"esc\"aped: \\ \u00e9","Plain":"a:b"}`,
		`{"name":"\ud800"}`,
	}
	if !plainType(reflect.TypeFor[fillOuter](), map[reflect.Type]bool{}) {
		t.Fatal("fillOuter is not plain")
	}
	filledCount := 0
	for _, in := range inputs {
		var tree any
		dec := json.NewDecoder(bytes.NewReader([]byte(in)))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want fillOuter
		werr := json.Unmarshal([]byte(in), &want)
		var got fillOuter
		filled := members([]byte(in)) == treeMembers(tree) && fillValue(reflect.ValueOf(&got).Elem(), tree)
		if filled {
			filledCount++
		}
		switch {
		case filled && werr != nil:
			t.Errorf("%s: filled %+v, but encoding/json fails: %v", in, got, werr)
		case filled && !reflect.DeepEqual(got, want):
			t.Errorf("%s: filled\n%+v\nencoding/json\n%+v", in, got, want)
		}
	}
	t.Logf("%d of %d inputs filled from the tree", filledCount, len(inputs))
	if filledCount < 8 {
		t.Errorf("only %d of %d inputs filled from the tree; the comparison checks little", filledCount, len(inputs))
	}
}

// TestFillTakesTheFastPath: a plain struct's contract fills from the tree,
// and types with their own decoding (or shapes the fill does not cover)
// are left to json.Unmarshal.
func TestFillTakesTheFastPath(t *testing.T) {
	c, err := contractFor(reflect.TypeFor[fillOuter]())
	if err != nil {
		t.Fatal(err)
	}
	if !c.plain {
		t.Fatal("fillOuter is not plain; Decode parses it twice")
	}
	const full = `{"name":"a","count":3,"size":1,"ratio":1,"ok":true,"items":[{"id":"x","score":1,"Sub":null}],"by_key":{},"ptr":null,"Plain":""}`
	var v fillOuter
	if derr := c.decode("Here it is: "+full, &v); derr != nil {
		t.Fatal(derr)
	}
	if v.Name != "a" || v.Count != 3 || len(v.Items) != 1 || v.Items[0].ID != "x" {
		t.Fatalf("decoded %+v", v)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader([]byte(full)))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	if !fillValue(reflect.ValueOf(new(fillOuter)).Elem(), tree) {
		t.Error("the fill gave up on a reply it covers: Decode parses it twice")
	}
	type withTime struct{ At time.Time }
	type withRaw struct{ R json.RawMessage }
	type withBytes struct{ B []byte }
	type withAny struct{ A any }
	type withString struct {
		N int `json:"n,string"`
	}
	type embedded struct{ fillInner }
	for _, typ := range []reflect.Type{
		reflect.TypeFor[withTime](), reflect.TypeFor[withRaw](), reflect.TypeFor[withBytes](),
		reflect.TypeFor[withAny](), reflect.TypeFor[withString](), reflect.TypeFor[embedded](),
		reflect.TypeFor[map[int]string](), reflect.TypeFor[[2]int](),
	} {
		if plainType(typ, map[reflect.Type]bool{}) {
			t.Errorf("%v is plain; json.Unmarshal decodes it differently", typ)
		}
	}
}
