package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sameBodies are bodies, good and bad, for the differential test: every
// SDK fixture's body plus the shapes that fail in each way.
func sameBodies(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "spec", "testdata", "sdk", "*.json"))
	if len(files) == 0 {
		t.Fatal("no SDK fixtures found")
	}
	var out [][]byte
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatal(err)
		}
		if len(fx.Body) > 0 {
			out = append(out, fx.Body)
		}
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `5`,
		`{"assistant_id":"a","command":{"goto":[{"node":5}]}}`,
		`{"assistant_id":"a","command":{"update":[["k",1],["k",2]],"goto":"n"}}`,
		`{"assistant_id":"a","input":null,"stream_mode":"values","interrupt_before":"*"}`,
		`{"assistant_id":"a","metadata":{"a":{"b":[1,2.5,"x",null,true]}},"after_seconds":1e-3}`,
		`{"assistant_id":5,"input":{"z":1,"a":[{"y":"<&>"}]},"stream_mode":["values","nope",3],"multitask_strategy":"x","after_seconds":"s"}`,
		`{"assistant_id":"a","interrupt_before":"x","interrupt_after":[1,""],"config":{"tags":[1],"recursion_limit":1.5,"configurable":{"a/b":{"c~d":1}}}}`,
		`{"assistant_id":"a","checkpoint":{"thread_id":7,"checkpoint_ns":[],"checkpoint_map":{"a":1}},"webhook":3,"feedback_keys":[1,"a"]}`,
		`{"thread_id":"t","metadata":{"x":1},"if_exists":"nope","ttl":{"strategy":"delete","ttl":-1},"supersteps":[{"updates":[{"values":{"a":1},"as_node":3}]}]}`,
		`{"thread_id":"t","metadata":[],"ttl":5}`,
		`{"limit":"x","offset":-1,"metadata":{"a":"b"},"status":"busy","sort_by":"nope","sort_order":"up","select":["thread_id","x"]}`,
		`{"name":"d","description":3,"extra":1,"cases":[{"input":1},{"bad":2}]}`,
		`{"graph_id":"g","config":{"configurable":{}},"context":{"a":1},"name":7,"if_exists":"raise","metadata":null}`,
		`{"namespace":["a",1],"key":"","value":{"a":1},"index":false,"ttl":"x"}`,
		`{"run_ids":["a",2],"status":"pending","action":"boom"}`,
		`{"schedule":"* * * * *","assistant_id":"a","input":[1],"end_time":5,"on_run_completed":"x","enabled":"yes"}`,
		`{"dataset_id":"d","assistant_id":"a","name":"e","unknown":true,"max_concurrency":1e400}`,
		`{"values":{"a":1},"as_node":"n","checkpoint":{"checkpoint_id":""},"checkpoint_id":3}`,
		`{"key":"k","score":"x","value":[],"comment":1,"source":"robot","unknown":1}`,
		`[{"assistant_id":"a","streamMode":"values","afterSeconds":1},{"assistantId":"b"},5]`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// sameTypes are the body types the differential test decodes into.
var sameTypes = []reflect.Type{
	reflect.TypeFor[RunCreate](), reflect.TypeFor[[]BatchRun](), reflect.TypeFor[ThreadCreate](),
	reflect.TypeFor[ThreadSearch](), reflect.TypeFor[ThreadPatch](), reflect.TypeFor[ThreadStateUpdate](),
	reflect.TypeFor[AssistantCreate](), reflect.TypeFor[AssistantSearch](), reflect.TypeFor[CronCreate](),
	reflect.TypeFor[StorePut](), reflect.TypeFor[StoreSearch](), reflect.TypeFor[RunCancelMany](),
	reflect.TypeFor[DatasetCreate](), reflect.TypeFor[DatasetCasesAdd](), reflect.TypeFor[ExperimentCreate](),
	reflect.TypeFor[FeedbackCreate](), reflect.TypeFor[ThreadPrune](), reflect.TypeFor[Command](),
}

// sameAsBefore decodes body into a new value of t with the decoder and
// with the walker as it was (oldwalker_test.go) and fails unless both give
// the same value and the same problem, byte for byte.
func sameAsBefore(t *testing.T, typ reflect.Type, body []byte) {
	t.Helper()
	got, want := reflect.New(typ), reflect.New(typ)
	gp, wp := DecodeBytesInto(body, got.Interface()), oldDecodeBytesInto(body, want.Interface())
	if d := cmp.Diff(wp, gp); d != "" {
		t.Fatalf("%v %s: the problem differs (-before +now):\n%s", typ, body, d)
	}
	if d := cmp.Diff(want.Interface(), got.Interface(), cmp.Exporter(func(reflect.Type) bool { return true })); d != "" {
		t.Fatalf("%v %s: the value differs (-before +now):\n%s", typ, body, d)
	}
}

// TestDecodeSameAsBefore: the decoder with its per-type caches and lazy
// pointers decodes every body into every body type exactly as the walker
// it replaced did: the same values, the same problems in the same order.
func TestDecodeSameAsBefore(t *testing.T) {
	for _, body := range sameBodies(t) {
		for _, typ := range sameTypes {
			sameAsBefore(t, typ, body)
		}
	}
}

// FuzzDecodeSameAsBefore is TestDecodeSameAsBefore on generated bodies.
func FuzzDecodeSameAsBefore(f *testing.F) {
	for _, b := range sameBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range sameTypes {
			sameAsBefore(t, typ, body)
		}
	})
}
