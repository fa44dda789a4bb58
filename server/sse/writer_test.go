package sse_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/server/sse"
)

// wireCases are events with tricky data, their exact wire form, and the
// data a spec reader (and the SDK) gets back: line breaks become LF.
var wireCases = []struct {
	name string
	ev   sse.Event
	wire string
	back string
}{
	{"json", sse.Event{Event: "values", ID: "0", Data: []byte(`{"a":1}`)},
		"event: values\nid: 0\ndata: {\"a\":1}\n\n", `{"a":1}`},
	{"no type no id", sse.Event{Data: []byte("x")}, "data: x\n\n", "x"},
	{"multi-line", sse.Event{Event: "e", Data: []byte("a\nb\nc")},
		"event: e\ndata: a\ndata: b\ndata: c\n\n", "a\nb\nc"},
	{"crlf and cr", sse.Event{Data: []byte("a\r\nb\rc")},
		"data: a\ndata: b\ndata: c\n\n", "a\nb\nc"},
	{"trailing newline kept", sse.Event{Data: []byte("a\n")}, "data: a\ndata: \n\n", "a\n"},
	{"blank lines inside", sse.Event{Data: []byte("a\n\n\nb")},
		"data: a\ndata: \ndata: \ndata: b\n\n", "a\n\n\nb"},
	{"leading space kept", sse.Event{Data: []byte("  x")}, "data:   x\n\n", "  x"},
	{"colon in data", sse.Event{Data: []byte(": not a comment")}, "data: : not a comment\n\n", ": not a comment"},
	{"empty data", sse.Event{Event: "end"}, "event: end\ndata: \n\n", ""},
	{"unicode", sse.Event{Event: "messages|agent:1", Data: []byte("你好 👋 \u2028 é")},
		"event: messages|agent:1\ndata: 你好 👋 \u2028 é\n\n", "你好 👋 \u2028 é"},
	{"retry", sse.Event{Data: []byte("r"), Retry: 2500 * time.Millisecond}, "data: r\nretry: 2500\n\n", "r"},
}

func TestAppendEventWireFormAndRoundTrip(t *testing.T) {
	for _, c := range wireCases {
		t.Run(c.name, func(t *testing.T) {
			got := string(sse.AppendEvent(nil, c.ev))
			if got != c.wire {
				t.Fatalf("wire = %q, want %q", got, c.wire)
			}
			evs, _, _ := readAll(t, got)
			if len(evs) != 1 {
				t.Fatalf("read %d events, want 1", len(evs))
			}
			if e := evs[0]; string(e.Data) != c.back || e.Event != c.ev.Event || e.ID != c.ev.ID {
				t.Errorf("read back %+v (data %q), want type %q id %q data %q", e, e.Data, c.ev.Event, c.ev.ID, c.back)
			}
		})
	}
}

func TestSendRejectsEventsClientsWouldMisread(t *testing.T) {
	cases := []struct {
		ev   sse.Event
		want string
	}{
		{sse.Event{Event: "a\nb"}, "line break"},
		{sse.Event{ID: "1\r"}, "CR, LF or NUL"},
		{sse.Event{ID: "1\x002"}, "CR, LF or NUL"},
		{sse.Event{Data: []byte{0xff, 'a'}}, "not valid UTF-8"},
		{sse.Event{Retry: -time.Second}, "negative"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		w, err := sse.NewWriter(rec, httptest.NewRequest("GET", "/", nil), sse.Options{Heartbeat: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Send(c.ev)
		w.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Send(%+v) = %v, want an error containing %q", c.ev, err, c.want)
		}
		if rec.Body.Len() != 0 {
			t.Errorf("Send(%+v) wrote %q for a rejected event", c.ev, rec.Body.String())
		}
	}
}

func TestNewWriterOptions(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	if _, err := sse.NewWriter(httptest.NewRecorder(), req, sse.Options{Heartbeat: 31 * time.Second}); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("a 31 s heartbeat: err = %v, want an error naming the maximum", err)
	}
	if _, err := sse.NewWriter(nil, req, sse.Options{}); err == nil {
		t.Error("a nil ResponseWriter was accepted")
	}
	rec := httptest.NewRecorder()
	w, err := sse.NewWriter(rec, req, sse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec.Header().Set("Location", "/threads/t/runs/r/stream")
	if err := w.Send(sse.Event{Event: "metadata", ID: "0", Data: []byte(`{"run_id":"r"}`)}); err != nil {
		t.Fatal(err)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q; the SDK refuses a stream that is not text/event-stream", ct)
	}
	if rec.Header().Get("Location") == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("headers = %v, want the caller's Location and Cache-Control no-cache", rec.Header())
	}
	if !rec.Flushed || rec.Code != http.StatusOK {
		t.Errorf("flushed %v, code %d; want a flushed 200", rec.Flushed, rec.Code)
	}
	w.Close()
	if err := w.Send(sse.Event{Data: []byte("x")}); err == nil {
		t.Error("Send after Close succeeded")
	}
}

// A ResponseWriter that cannot flush would hold events in a buffer; the
// Writer says so instead of pretending to stream.
func TestWriterNeedsAFlusher(t *testing.T) {
	w, err := sse.NewWriter(noFlush{httptest.NewRecorder()}, httptest.NewRequest("GET", "/", nil), sse.Options{Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Send(sse.Event{Data: []byte("x")}); err == nil || !strings.Contains(err.Error(), "cannot flush") {
		t.Fatalf("Send = %v, want a cannot-flush error", err)
	}
}

type noFlush struct{ rw http.ResponseWriter }

func (n noFlush) Header() http.Header         { return n.rw.Header() }
func (n noFlush) Write(b []byte) (int, error) { return n.rw.Write(b) }
func (n noFlush) WriteHeader(code int)        { n.rw.WriteHeader(code) }

// An idle stream gets heartbeat comments at the interval; events push
// them back; and they stop with Close, leaving no goroutine (goleak).
func TestHeartbeatsWhileIdle(t *testing.T) {
	const hb = 40 * time.Millisecond
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := sse.NewWriter(rw, r, sse.Options{Heartbeat: hb})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		if err := w.Send(sse.Event{Event: "metadata", ID: "0", Data: []byte("{}")}); err != nil {
			t.Error(err)
			return
		}
		<-release
		_ = w.Send(sse.Event{Event: "end", ID: "1"})
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var beats atomic.Int32
	r := sse.NewReader(resp.Body)
	r.OnComment = func(c string) {
		if c == "heartbeat" {
			beats.Add(1)
		}
	}
	start := time.Now()
	if e, err := r.Next(); err != nil || e.Event != "metadata" {
		t.Fatalf("first event %+v, %v", e, err)
	}
	go func() { time.Sleep(6 * hb); close(release) }()
	if e, err := r.Next(); err != nil || e.Event != "end" {
		t.Fatalf("second event %+v, %v", e, err)
	}
	elapsed := time.Since(start)
	n := beats.Load()
	// 6 intervals idle: at least 3 beats even on a loaded machine, and
	// never more than one per interval.
	if n < 3 || int64(n) > int64(elapsed/hb)+1 {
		t.Errorf("%d heartbeats in %v at a %v interval", n, elapsed, hb)
	}
}

// Events written more often than the interval leave no room for a
// heartbeat: heartbeats are for idle streams only.
func TestNoHeartbeatWhileBusy(t *testing.T) {
	rec := httptest.NewRecorder()
	w, err := sse.NewWriter(&lockedRecorder{rec: rec}, httptest.NewRequest("GET", "/", nil), sse.Options{Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		if err := w.Send(sse.Event{ID: sse.FormatID(int64(i)), Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.Close()
	if strings.Contains(rec.Body.String(), "heartbeat") {
		t.Errorf("heartbeat sent on a busy stream:\n%s", rec.Body.String())
	}
}

// lockedRecorder hides the recorder's own Flush so ResponseController uses
// ours; the Writer already serialises calls, so no lock is needed here.
type lockedRecorder struct{ rec *httptest.ResponseRecorder }

func (l *lockedRecorder) Header() http.Header         { return l.rec.Header() }
func (l *lockedRecorder) Write(b []byte) (int, error) { return l.rec.Write(b) }
func (l *lockedRecorder) WriteHeader(code int)        { l.rec.WriteHeader(code) }
func (l *lockedRecorder) Flush()                      { l.rec.Flush() }

// A client that connects and never reads must not block a writer forever:
// once the socket buffers are full, a write fails within WriteTimeout and
// the Writer stays failed.
func TestWriteDeadlineUnblocksAStuckClient(t *testing.T) {
	const timeout = 150 * time.Millisecond
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := sse.NewWriter(rw, r, sse.Options{Heartbeat: -1, WriteTimeout: timeout})
		if err != nil {
			result <- err
			return
		}
		defer w.Close()
		chunk := []byte(strings.Repeat("x", 1<<20))
		for i := range 4096 { // up to 4 GiB: far beyond any socket buffer
			if err := w.Send(sse.Event{ID: sse.FormatID(int64(i)), Data: chunk}); err != nil {
				if w.Err() == nil || w.Send(sse.Event{Data: []byte("y")}) == nil {
					result <- errors.New("the Writer accepted a write after a failed one")
					return
				}
				result <- err
				return
			}
		}
		result <- nil
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Read the status line only, then stop reading.
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	select {
	case err := <-result:
		if err == nil {
			t.Fatal("4 GiB written to a client that reads nothing")
		}
		if !strings.Contains(err.Error(), "not reading within") {
			t.Errorf("error %q does not say the client stopped reading", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the writer is still blocked 20 s after the client stopped reading")
	}
}

// A client that goes away ends the heartbeats with the request context
// and makes Send fail, even if the handler never calls Send again before
// Close.
func TestClientGoneStopsTheWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	w, err := sse.NewWriter(httptest.NewRecorder(), req, sse.Options{Heartbeat: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Open(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Send(sse.Event{Data: []byte("x")}); err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Send after the client left = %v, want an error wrapping context.Canceled", err)
	}
}

// The stream the Writer produces reads back, event for event, through the
// spec Reader after an HTTP round trip.
func TestWriterOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w, err := sse.NewWriter(rw, r, sse.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		for _, c := range wireCases {
			if err := w.Send(c.ev); err != nil {
				t.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := sse.NewReader(resp.Body)
	lastID := ""
	for _, c := range wireCases {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.ev.ID != "" {
			lastID = c.ev.ID
		}
		if string(e.Data) != c.back || e.Event != c.ev.Event || e.ID != lastID {
			t.Errorf("%s: got %+v, want data %q type %q id %q", c.name, e, c.back, c.ev.Event, lastID)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last event: %v, want EOF", err)
	}
}

// The heartbeat goroutine ends with the request's context even before the
// handler calls Close, and writes nothing after it.
func TestHeartbeatsStopWithTheRequest(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	rec := &countingWriter{}
	w, err := sse.NewWriter(rec, req, sse.Options{Heartbeat: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Open(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rec.writes.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if rec.writes.Load() < 2 {
		t.Fatal("no heartbeats on an idle stream")
	}
	cancel()
	goleak.VerifyNone(t, before) // retries until the goroutine is gone
	n := rec.writes.Load()
	time.Sleep(30 * time.Millisecond)
	if rec.writes.Load() != n {
		t.Error("heartbeats written after the request ended")
	}
}

// countingWriter is a ResponseWriter that counts writes, safe to read
// while the Writer writes.
type countingWriter struct {
	h      http.Header
	writes atomic.Int32
}

func (c *countingWriter) Header() http.Header {
	if c.h == nil {
		c.h = http.Header{}
	}
	return c.h
}
func (c *countingWriter) Write(b []byte) (int, error) { c.writes.Add(1); return len(b), nil }
func (c *countingWriter) WriteHeader(int)             {}
func (c *countingWriter) Flush()                      {}
