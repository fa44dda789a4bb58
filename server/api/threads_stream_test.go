package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/sse"
)

// A client that rejoins the thread stream with the last id it got
// continues after that event — the rest of its run, then the next run —
// with no gap and no duplicate across the run boundary.
func TestThreadStreamResumes(t *testing.T) {
	e := newRunEnv(t)
	modes := []string{"values", "updates"}
	a := e.create("t1", map[string]any{"input": input("slow"), "stream_mode": modes})
	b := e.create("t1", map[string]any{"input": input("b"), "stream_mode": modes, "multitask_strategy": "enqueue"})
	<-e.slow // run a is inside its slow step: its first events are logged

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	read := func(resp *http.Response, n int) []sse.Event {
		t.Helper()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("thread stream: %d", resp.StatusCode)
		}
		if loc := resp.Header.Get("Location"); loc != "/threads/t1/stream" {
			t.Errorf("Location %q: the SDK would not reconnect a dropped thread stream", loc)
		}
		r := sse.NewReader(resp.Body)
		var out []sse.Event
		for len(out) < n {
			ev, err := r.Next()
			if err != nil {
				t.Fatalf("after %v: %v", names(out), err)
			}
			out = append(out, ev)
		}
		return out
	}
	c1, stop1 := context.WithCancel(ctx)
	first := read(e.open(c1, "GET", "/threads/t1/stream", nil), 2)
	stop1()
	close(e.gate)
	e.waitStatus("t1", b, "success")

	// What the two runs logged, in order, as thread stream ids.
	var want []string
	for _, run := range []string{a, b} {
		evs, err := e.db.ReadEvents(context.Background(), DefaultTenant, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			want = append(want, threadEventID(run, ev.Seq)+" "+ev.Event)
		}
	}
	last := first[len(first)-1].ID
	if !strings.HasPrefix(last, a+":") {
		t.Fatalf("thread stream id %q does not name run %s", last, a)
	}
	rest := read(e.open(ctx, "GET", "/threads/t1/stream", nil, "Last-Event-ID", last), len(want)-len(first))
	var got []string
	for _, ev := range append(first, rest...) {
		got = append(got, ev.ID+" "+ev.Event)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first stream and its resumption:\n%s\nwant the runs' logs:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Resuming after the last event of run a starts run b from its first.
	var lastOfA string
	for _, w := range want {
		if strings.HasPrefix(w, a+":") {
			lastOfA = strings.Fields(w)[0]
		}
	}
	next := read(e.open(ctx, "GET", "/threads/t1/stream", nil, "Last-Event-ID", lastOfA), 1)
	if next[0].ID != threadEventID(b, 1) || next[0].Event != "metadata" {
		t.Errorf("resuming after run a's last event gave %s %s, want run b's metadata", next[0].ID, next[0].Event)
	}
	for _, bad := range []string{"x", "7", a + ":x", ":3", a + ":-2"} {
		if st, _, body := e.do("GET", "/threads/t1/stream", nil, "Last-Event-ID", bad); st != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %q: %d %s, want 400", bad, st, body)
		}
	}
}
