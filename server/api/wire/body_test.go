package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadBody: whatever Content-Length says (right, short, long, absent
// or larger than the 64 KiB presize), ReadBody returns the bytes the body
// has, at most limit+1 of them.
func TestReadBody(t *testing.T) {
	big := strings.Repeat("x", presize+100)
	for _, c := range []struct {
		name        string
		body        string
		size, limit int64
		want        string
	}{
		{"exact", "hello", 5, 100, "hello"},
		{"announced short", "hello world", 5, 100, "hello world"},
		{"announced long", "hi", 50, 100, "hi"},
		{"unknown", "hello", -1, 100, "hello"},
		{"over the limit keeps limit+1", "hello world", 11, 5, "hello "},
		{"announced short, over the limit", "hello world", 3, 5, "hello "},
		{"over the presize", big, int64(len(big)), 1 << 20, big},
		{"empty", "", 0, 100, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// One byte per read, so every growth path runs.
			got, err := ReadBody(iotest.OneByteReader(strings.NewReader(c.body)), c.size, c.limit)
			if err != nil || string(got) != c.want {
				t.Fatalf("got %d bytes %.20q, %v; want %d bytes %.20q", len(got), got, err, len(c.want), c.want)
			}
		})
	}
	if _, err := ReadBody(iotest.ErrReader(io.ErrClosedPipe), 5, 100); err != io.ErrClosedPipe {
		t.Fatalf("a failing body: got %v", err)
	}
}

// TestDecodeBufferedBody: a body the server read ahead (Body) decodes like
// one read from the connection, takes only what is unread, and over the
// route's limit is the same 413.
func TestDecodeBufferedBody(t *testing.T) {
	req := func(b io.ReadCloser) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/threads/t/runs/wait", nil)
		r.Body = b
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	mem, p := Decode[RunCreate](req(NewBody([]byte(sdkRunBody))), 0)
	if p != nil {
		t.Fatal(p)
	}
	conn, p := Decode[RunCreate](req(io.NopCloser(strings.NewReader(sdkRunBody))), 0)
	if p != nil {
		t.Fatal(p)
	}
	if string(mustJSON(t, mem)) != string(mustJSON(t, conn)) {
		t.Fatalf("from memory %s, from the connection %s", mustJSON(t, mem), mustJSON(t, conn))
	}
	b := NewBody([]byte(`xx{"assistant_id":"a"}`))
	if _, err := io.ReadFull(b, make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	if v, p := Decode[RunCreate](req(b), 0); p != nil || v.AssistantID != "a" {
		t.Fatalf("after a partial read: %+v %v", v, p)
	}
	if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the decode left %d bytes unread (%v)", n, err)
	}
	_, p1 := Decode[RunCreate](req(NewBody([]byte(sdkRunBody))), 10)
	_, p2 := Decode[RunCreate](req(io.NopCloser(bytes.NewReader([]byte(sdkRunBody)))), 10)
	if p1 == nil || p2 == nil || p1.Status != 413 || p1.Detail != p2.Detail {
		t.Fatalf("over the limit: from memory %v, from the connection %v", p1, p2)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
