package sse_test

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/server/sse"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readAll parses every event of s twice, from one read and one byte at a
// time (so line ends split across reads are exercised), and checks both
// give the same events.
func readAll(t *testing.T, s string) ([]sse.Event, []string, *sse.Reader) {
	t.Helper()
	parse := func(src io.Reader) ([]sse.Event, []string, *sse.Reader) {
		r := sse.NewReader(src)
		var comments []string
		r.OnComment = func(c string) { comments = append(comments, c) }
		var evs []sse.Event
		for {
			e, err := r.Next()
			if errors.Is(err, io.EOF) {
				return evs, comments, r
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			evs = append(evs, e)
		}
	}
	whole, _, _ := parse(strings.NewReader(s))
	evs, comments, r := parse(iotest.OneByteReader(strings.NewReader(s)))
	if len(whole) != len(evs) {
		t.Fatalf("%d events read whole, %d byte by byte", len(whole), len(evs))
	}
	for i := range evs {
		if whole[i].ID != evs[i].ID || whole[i].Event != evs[i].Event || string(whole[i].Data) != string(evs[i].Data) {
			t.Fatalf("event %d: %+v read whole, %+v byte by byte", i, whole[i], evs[i])
		}
	}
	return evs, comments, r
}

func TestReaderFollowsTheSpec(t *testing.T) {
	type ev struct{ id, event, data string }
	cases := []struct {
		name     string
		in       string
		want     []ev
		comments []string
	}{
		{"lf", "event: a\nid: 1\ndata: x\n\n", []ev{{"1", "a", "x"}}, nil},
		{"crlf", "event: a\r\nid: 1\r\ndata: x\r\n\r\n", []ev{{"1", "a", "x"}}, nil},
		{"cr only", "event: a\rdata: x\r\r", []ev{{"", "a", "x"}}, nil},
		{"mixed line ends", "data: a\r\ndata: b\rdata: c\n\n", []ev{{"", "", "a\nb\nc"}}, nil},
		{"no space after colon", "data:x\n\n", []ev{{"", "", "x"}}, nil},
		{"only one space stripped", "data:  x\n\n", []ev{{"", "", " x"}}, nil},
		{"field without colon is empty", "data\n\n", []ev{{"", "", ""}}, nil},
		{"empty data line", "data: \n\n", []ev{{"", "", ""}}, nil},
		{"trailing empty data line keeps a newline", "data: a\ndata: \n\n", []ev{{"", "", "a\n"}}, nil},
		{"bom dropped", "\xEF\xBB\xBFdata: x\n\n", []ev{{"", "", "x"}}, nil},
		{"comments", ": hello\n:x\ndata: y\n\n", []ev{{"", "", "y"}}, []string{"hello", "x"}},
		{"event without data is not dispatched", "event: a\n\ndata: b\n\n", []ev{{"", "", "b"}}, nil},
		{"id carries over", "id: 7\ndata: a\n\ndata: b\n\n", []ev{{"7", "", "a"}, {"7", "", "b"}}, nil},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []ev{{"1", "", "a"}, {"1", "", "b"}}, nil},
		{"empty id resets", "id: 1\ndata: a\n\nid\ndata: b\n\n", []ev{{"1", "", "a"}, {"", "", "b"}}, nil},
		{"unknown fields ignored", "foo: bar\ndata: a\n\n", []ev{{"", "", "a"}}, nil},
		{"partial event at EOF dropped", "data: a\n\ndata: b\n", []ev{{"", "", "a"}}, nil},
		{"unicode", "data: 你好 👋\n\n", []ev{{"", "", "你好 👋"}}, nil},
		{"blank lines between events", "\n\n\ndata: a\n\n\n", []ev{{"", "", "a"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, comments, _ := readAll(t, c.in)
			var got []ev
			for _, e := range evs {
				got = append(got, ev{e.ID, e.Event, string(e.Data)})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("events = %q, want %q", got, c.want)
			}
			if !slices.Equal(comments, c.comments) {
				t.Errorf("comments = %q, want %q", comments, c.comments)
			}
		})
	}
}

func TestReaderRetry(t *testing.T) {
	_, _, r := readAll(t, "retry: 1500\ndata: a\n\nretry: 12x\ndata: b\n\n")
	if r.Retry != 1500*time.Millisecond {
		t.Errorf("Retry = %v, want 1.5s (a non-numeric retry is ignored)", r.Retry)
	}
}

func TestReaderLineLimit(t *testing.T) {
	r := sse.NewReader(strings.NewReader("data: " + strings.Repeat("x", 100) + "\n\n"))
	r.MaxLine = 50
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "longer than 50") {
		t.Fatalf("err = %v, want a line-length error", err)
	}
}
