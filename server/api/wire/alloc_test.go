package wire

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// sdkRunBody is a run creation as the JS SDK sends it to runs/wait: an
// input message, config, metadata, stream modes and the flags.
const sdkRunBody = `{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"hello there <b>"}]},` +
	`"config":{"configurable":{"user_id":"u1"},"tags":["a"]},"metadata":{"source":"sdk"},` +
	`"stream_mode":["values","updates"],"if_not_exists":"create","multitask_strategy":"enqueue","on_disconnect":"cancel"}`

// maxRunCreateAllocs bounds the allocations of decoding sdkRunBody
// (measured: 92 with the per-type caches and lazy pointers, 106 before
// them). Most are encoding/json's parse of the body into a tree; a change
// that makes the walker allocate per value again fails here.
const maxRunCreateAllocs = 96

// TestDecodeRunCreateAllocs keeps the run-creation decode, on the path of
// every runs/wait and runs/stream, from growing its allocations.
func TestDecodeRunCreateAllocs(t *testing.T) {
	body := []byte(sdkRunBody)
	n := testing.AllocsPerRun(200, func() {
		if _, p := DecodeBytes[RunCreate](body); p != nil {
			t.Fatal(p)
		}
	})
	if n > maxRunCreateAllocs {
		t.Fatalf("decoding a run creation took %.0f allocations, more than the %d bound", n, maxRunCreateAllocs)
	}
}

// BenchmarkDecodeRunCreate is Decode of an SDK run creation from a request.
func BenchmarkDecodeRunCreate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/threads/t/runs/wait", strings.NewReader(sdkRunBody))
		r.Header.Set("Content-Type", "application/json")
		if _, p := Decode[RunCreate](r, 0); p != nil {
			b.Fatal(p)
		}
	}
}

// BenchmarkDecodeRunCreateBefore is BenchmarkDecodeRunCreate's body
// decoded by the walker as it was, for comparison.
func BenchmarkDecodeRunCreateBefore(b *testing.B) {
	body := []byte(sdkRunBody)
	b.ReportAllocs()
	for b.Loop() {
		var v RunCreate
		if p := oldDecodeBytesInto(body, &v); p != nil {
			b.Fatal(p)
		}
	}
}

// BenchmarkDecodeRunCreateBytes is the decode without the request.
func BenchmarkDecodeRunCreateBytes(b *testing.B) {
	body := []byte(sdkRunBody)
	b.ReportAllocs()
	for b.Loop() {
		if _, p := DecodeBytes[RunCreate](body); p != nil {
			b.Fatal(p)
		}
	}
}
