package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeRunCreate: any body either decodes to a RunCreate that encodes
// and decodes back to itself, or is a 400 or 422 problem that says where —
// never a panic, never another status.
func FuzzDecodeRunCreate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "spec", "testdata", "sdk", "runs_*.json"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var fx struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(fx.Body))
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"assistant_id":"a","command":{"goto":[{"node":5}]}}`,
		`{"assistant_id":"a","command":{"update":[["k",1],["k",2]],"goto":"n"}}`,
		`{"assistant_id":"a","input":null,"stream_mode":"values","interrupt_before":"*"}`,
		`{"assistant_id":"a","metadata":{"a":{"b":[1,2.5,"x",null,true]}},"after_seconds":1e-3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[RunCreate](t, body) })
}

// roundTrip checks one body: it decodes to a T that encodes and decodes
// back to itself, or is a 400 or 422 problem that says where — never a
// panic, never another status.
func roundTrip[T any](t *testing.T, body []byte) {
	v, p := DecodeBytes[T](body)
	if p != nil {
		if p.Status != 400 && p.Status != 422 {
			t.Fatalf("status %d for %q", p.Status, body)
		}
		if p.Detail == "" || (p.Status == 422 && len(p.Errors) == 0) {
			t.Fatalf("a problem that does not say what: %+v", p)
		}
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("decoded %q but cannot encode it: %v", body, err)
	}
	again, p := DecodeBytes[T](enc)
	if p != nil {
		t.Fatalf("%q decoded, its encoding %s does not: %v", body, enc, p)
	}
	if d := cmp.Diff(v, again, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("round trip of %q changed it (-first +second):\n%s", body, d)
	}
}

// FuzzDecodeThreadStateUpdate: POST /threads/{id}/state bodies.
func FuzzDecodeThreadStateUpdate(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"values":{"messages":[{"role":"user","content":"hi"}]}}`,
		`{"values":[{"a":1}],"as_node":"ask","checkpoint_id":"x"}`, `{"values":null,"as_node":"__end__"}`,
		`{"checkpoint":{"checkpoint_id":"c","checkpoint_ns":""},"values":{"k":[1,"2",{"3":4}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[ThreadStateUpdate](t, body) })
}

// FuzzDecodeStorePut: PUT /store/items bodies.
func FuzzDecodeStorePut(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"namespace":["a","b"],"key":"k","value":{"x":1}}`,
		`{"namespace":[],"key":"","value":null}`, `{"namespace":["a.b"],"key":"k","value":{},"index":false,"ttl":5}`,
		`{"namespace":["a"],"key":"k","value":{"x":1},"index":["x","y.z"],"ttl":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[StorePut](t, body) })
}

// FuzzDecodeStoreSearch: POST /store/items/search bodies.
func FuzzDecodeStoreSearch(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"namespace_prefix":["a"],"filter":{"x":1},"limit":10,"offset":0}`,
		`{"namespace_prefix":["a"],"query":"q","limit":-1}`, `{"namespace_prefix":null,"refresh_ttl":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[StoreSearch](t, body) })
}

// FuzzDecodeThreadSearch: POST /threads/search bodies.
func FuzzDecodeThreadSearch(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"metadata":{"a":1},"status":"idle","limit":5,"offset":2}`,
		`{"values":{"k":"v"},"sort_by":"created_at","sort_order":"desc","ids":["a","b"]}`,
		`{"status":"nope","limit":"ten"}`, `{"select":["thread_id","values"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[ThreadSearch](t, body) })
}

// FuzzDecodeCronCreate: the cron part of POST /runs/crons bodies (the
// schedule goes through robfig/cron's parser).
func FuzzDecodeCronCreate(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"assistant_id":"a","schedule":"*/5 * * * *"}`,
		`{"assistant_id":"a","schedule":"0 9 * * mon-fri","timezone":"Europe/Paris","end_time":"2030-01-01T00:00:00Z","enabled":false}`,
		`{"assistant_id":"a","schedule":"@hourly","on_run_completed":"keep","metadata":{"k":[1]}}`,
		`{"assistant_id":"a","schedule":"1-70/0 * * * *"}`, `{"schedule":"* * * * * *","end_time":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip[CronCreate](t, body) })
}
