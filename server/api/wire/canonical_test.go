package wire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

var canonicalSeeds = []string{
	`{}`, `{"a":1}`, `{"a":1,"b":[1,{"z":2,"a":3}]}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
	`{ "a":1}`, `{"a": 1}`, `{"a":"<b>"}`, `{"a":"x\u003cy"}`, `{"\u0061":1}`, `{"a\"b":1}`,
	"{\"a\":\"\xe2\x80\xa8\"}", "{\"\xff\":1}", "{\"a\":\"\xff\"}", `{"a":1}{}`, `{"a":}`, `{"a":1,}`,
	`{"log":["hi","echo hi"],"messages":[{"content":"x","type":"human"}]}`, `null`, `[]`, `{"a":{"":1},"":2}`,
	`{"":1,"a":{"c":1,"b":2}}`, `{"a":"\\"}`, `{"é":1,"z":2}`, `{"z":2,"é":1}`, `{"a":1e5,"b":-0.5,"c":true,"d":null}`,
}

// sameAfterMarshal reports whether b decoded into a map[string]json.RawMessage
// and encoded again is b.
func sameAfterMarshal(b []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return false
	}
	again, err := json.Marshal(m)
	return err == nil && bytes.Equal(again, b)
}

// TestCanonicalObject: an object CanonicalObject accepts is one json.Marshal
// writes back byte for byte, and the usual runs' values are accepted.
func TestCanonicalObject(t *testing.T) {
	for _, s := range canonicalSeeds {
		if CanonicalObject([]byte(s)) && !sameAfterMarshal([]byte(s)) {
			t.Errorf("%q is accepted but json.Marshal writes it otherwise", s)
		}
	}
	for _, s := range []string{`{}`, `{"a":1,"b":[1,{"z":2,"a":3}]}`, `{"log":["hi","echo hi"],"messages":[{"content":"x","type":"human"}]}`, `{"z":2,"é":1}`} {
		if !CanonicalObject([]byte(s)) {
			t.Errorf("%q is what json.Marshal writes but is not accepted", s)
		}
	}
	for _, s := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{ "a":1}`, `{"a":"<b>"}`, `{"\u0061":1}`, "{\"\xff\":1}", `{"a":1}{}`, `null`} {
		if CanonicalObject([]byte(s)) {
			t.Errorf("%q is accepted", s)
		}
	}
}

// FuzzCanonicalObject: whatever CanonicalObject accepts, json.Marshal
// writes back byte for byte.
func FuzzCanonicalObject(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if CanonicalObject(b) && !sameAfterMarshal(b) {
			t.Fatalf("%q is accepted but json.Marshal writes it otherwise", b)
		}
	})
}

// TestWriteJSONObject: the answer is what WriteJSON writes for the object
// decoded into a map, whether it is passed through or encoded again.
func TestWriteJSONObject(t *testing.T) {
	for _, s := range canonicalSeeds {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			continue
		}
		req := httptest.NewRequest(http.MethodPost, "/runs/wait", nil)
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		WriteJSON(want, req, http.StatusOK, m)
		WriteJSONObject(got, req, http.StatusOK, json.RawMessage(s))
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%q: got %d %q %q, want %d %q %q", s, got.Code, got.Header().Get("Content-Type"), got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
}

// BenchmarkWriteValues is a runs/wait answer of a conversation's values,
// passed through (canonical) against decoded and encoded again.
func BenchmarkWriteValues(b *testing.B) {
	msgs := make([]map[string]string, 50)
	for i := range msgs {
		msgs[i] = map[string]string{"type": "human", "content": "a message of a long conversation, with some text in it", "id": "m"}
	}
	raw, _ := json.Marshal(map[string]any{"messages": msgs, "step": 3})
	req := httptest.NewRequest(http.MethodPost, "/runs/wait", nil)
	b.Run("pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			WriteJSONObject(httptest.NewRecorder(), req, http.StatusOK, raw)
		}
	})
	b.Run("decode-encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(raw, &m)
			WriteJSON(httptest.NewRecorder(), req, http.StatusOK, m)
		}
	})
}
