package remotegraph

import (
	"strings"
	"testing"
)

// The stream reader dispatches events on blank lines (ids carried over,
// data lines joined, comments skipped, a partial event at the end
// dropped), and refuses a line over its bound with an error that says so.
func TestReadSSE(t *testing.T) {
	in := ": keep-alive\n\nevent: updates\nid: 3\ndata: {\"a\":\ndata: 1}\n\nevent: custom\ndata: 2\n\nevent: values\ndata: partial"
	var got []string
	err := readSSE(strings.NewReader(in), func(e sseEvent) error {
		got = append(got, e.id+" "+e.name+" "+string(e.data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "3 updates {\"a\":\n1}|3 custom 2"; strings.Join(got, "|") != want {
		t.Errorf("events %q; want %q", strings.Join(got, "|"), want)
	}
	long := "data: " + strings.Repeat("x", maxStreamLine+1) + "\n\n"
	err = readSSE(strings.NewReader(long), func(sseEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a line over the bound: %v", err)
	}
}

// A message's text: a string, or the text of its text parts.
func TestContentText(t *testing.T) {
	if got := contentText([]byte(`"hi"`)); got != "hi" {
		t.Errorf("string content: %q", got)
	}
	if got := contentText([]byte(`[{"type":"text","text":"a"},{"type":"image_url"},{"text":"b"}]`)); got != "ab" {
		t.Errorf("parts: %q", got)
	}
	if got := contentText([]byte(`{"nope":1}`)); got != "" {
		t.Errorf("not content: %q", got)
	}
}
