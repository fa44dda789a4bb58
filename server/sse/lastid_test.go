package sse_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/sse"
)

func TestLastEventID(t *testing.T) {
	cases := []struct {
		name, header, url string
		after             int64
		ok                bool
		err               string
	}{
		{name: "absent: live only", url: "/"},
		{name: "empty header: live only", header: " ", url: "/"},
		{name: "replay all", header: "-1", url: "/", after: sse.ReplayAll, ok: true},
		{name: "resume after 0", header: "0", url: "/", after: 0, ok: true},
		{name: "resume after 41", header: " 41 ", url: "/", after: 41, ok: true},
		{name: "query fallback", url: "/?last_event_id=5", after: 5, ok: true},
		{name: "header wins over query", header: "3", url: "/?last_event_id=5", after: 3, ok: true},
		{name: "below -1", header: "-2", url: "/", err: "Last-Event-ID header \"-2\""},
		{name: "not a number", header: "1700000000000-0", url: "/", err: "decimal number"},
		{name: "bad query", url: "/?last_event_id=x", err: "last_event_id query parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", c.url, nil)
			if c.header != "" {
				r.Header.Set("Last-Event-ID", c.header)
			}
			after, ok, err := sse.LastEventID(r)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || after != c.after || ok != c.ok {
				t.Errorf("LastEventID = %d, %v, %v; want %d, %v, nil", after, ok, err, c.after, c.ok)
			}
		})
	}
	if got := sse.FormatID(41); got != "41" {
		t.Errorf("FormatID(41) = %q", got)
	}
}
