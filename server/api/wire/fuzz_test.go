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
	f.Fuzz(func(t *testing.T, body []byte) {
		v, p := DecodeBytes[RunCreate](body)
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
		again, p := DecodeBytes[RunCreate](enc)
		if p != nil {
			t.Fatalf("%q decoded, its encoding %s does not: %v", body, enc, p)
		}
		if d := cmp.Diff(v, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("round trip of %q changed it (-first +second):\n%s", body, d)
		}
	})
}
