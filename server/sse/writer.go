// Package sse writes and reads Server-Sent Events as the LangGraph SDK
// (@langchain/langgraph-sdk) and browsers' EventSource read them.
//
// Writer frames events (event:, id:, data: lines, one per line of the data),
// flushes each one, sends heartbeat comments while the stream is idle and
// bounds every write with a deadline, so a client that stops reading cannot
// hold a run's writer forever. LastEventID reads where a reconnecting client
// wants to resume. Reader parses a stream by the WHATWG rules; the service's
// tests use it to check what a client sees.
package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Defaults and limits for Options.
const (
	// DefaultHeartbeat is the idle time after which the Writer sends a
	// heartbeat comment.
	DefaultHeartbeat = 10 * time.Second
	// MaxHeartbeat is the longest heartbeat interval NewWriter accepts. The
	// SDK's idle watchdog (its "auto" mode) learns the heartbeat interval
	// and reconnects when no line arrives within min(max(3×interval, 6 s),
	// 30 s); an interval above 20 s would leave it too little margin under
	// the 30 s cap and make clients reconnect on a healthy stream.
	MaxHeartbeat = 20 * time.Second
	// DefaultWriteTimeout bounds one event's write and flush.
	DefaultWriteTimeout = 10 * time.Second
)

// Event is one server-sent event.
type Event struct {
	// ID is sent as the id: line; the client sends the last one back in
	// Last-Event-ID when it reconnects. "" sends no id: line (the client
	// keeps the previous one). It must not contain CR, LF or NUL.
	ID string
	// Event is the event type ("values", "messages|ns", "end", ...). ""
	// sends no event: line, which clients read as the default "message".
	// It must not contain CR or LF.
	Event string
	// Data is the payload, UTF-8. Every line of it (split at CRLF, CR or
	// LF) becomes its own data: line, so the client gets it back with its
	// line breaks as LF. Empty data is sent as one empty data: line, so
	// the event is still delivered (the SDK reads it as null).
	Data []byte
	// Retry, when positive, sends a retry: line telling EventSource
	// clients how long to wait before reconnecting (whole milliseconds).
	Retry time.Duration
}

// Options configures a Writer. The zero value uses the defaults.
type Options struct {
	// Heartbeat is the idle time after which a ": heartbeat" comment is
	// sent; each event or comment restarts it. 0 means DefaultHeartbeat,
	// a negative value turns heartbeats off; above MaxHeartbeat is an
	// error.
	Heartbeat time.Duration
	// WriteTimeout bounds each write and flush: a client that reads
	// nothing for this long makes the write fail and the Writer unusable.
	// 0 means DefaultWriteTimeout; a negative value turns the deadline off.
	// Between writes the connection has no write deadline, so the server's
	// own WriteTimeout does not end a long stream.
	WriteTimeout time.Duration
}

// Writer writes events to one SSE response. It is safe for concurrent use;
// events are written whole, in the order the calls take the lock.
//
// Create it with NewWriter, set any headers (Location, Content-Location)
// before the first Send or Open, and Close it before the handler returns
// (defer w.Close()): the heartbeat goroutine must not outlive the handler.
type Writer struct {
	rw  http.ResponseWriter
	rc  *http.ResponseController
	ctx context.Context

	heartbeat    time.Duration
	writeTimeout time.Duration

	mu        sync.Mutex
	opened    bool
	closed    bool
	err       error // first write error; every later call returns it
	lastWrite time.Time
	buf       []byte

	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the heartbeat goroutine returns
}

// NewWriter prepares an SSE response on rw for the request r: it sets
// Content-Type text/event-stream, Cache-Control no-cache and
// X-Accel-Buffering no (so reverse proxies do not buffer the stream). It
// writes nothing yet. The request's context ends the heartbeats and fails
// later writes.
func NewWriter(rw http.ResponseWriter, r *http.Request, o Options) (*Writer, error) {
	if rw == nil || r == nil {
		return nil, errors.New("sse: NewWriter needs the handler's ResponseWriter and Request, got nil")
	}
	hb := o.Heartbeat
	switch {
	case hb == 0:
		hb = DefaultHeartbeat
	case hb > MaxHeartbeat:
		return nil, fmt.Errorf("sse: heartbeat interval %v is above the %v maximum; the SDK's idle watchdog would reconnect a healthy stream, so use a shorter one", hb, MaxHeartbeat)
	}
	wt := o.WriteTimeout
	if wt == 0 {
		wt = DefaultWriteTimeout
	}
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	return &Writer{
		rw:           rw,
		rc:           http.NewResponseController(rw),
		ctx:          r.Context(),
		heartbeat:    hb,
		writeTimeout: wt,
		stop:         make(chan struct{}),
		stopped:      make(chan struct{}),
	}, nil
}

// Open writes the status line and headers (200) and flushes them, so the
// client sees the stream start before the first event; it starts the
// heartbeats. Send calls it when needed; calling it again does nothing.
func (w *Writer) Open() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.openLocked()
}

func (w *Writer) openLocked() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("sse: write after Close")
	}
	if w.opened {
		return nil
	}
	w.opened = true
	w.rw.WriteHeader(http.StatusOK)
	if err := w.flushLocked(); err != nil {
		close(w.stopped) // no heartbeat goroutine to wait for
		return err
	}
	if w.heartbeat > 0 {
		go w.heartbeats()
	} else {
		close(w.stopped)
	}
	return nil
}

// Send writes one event and flushes it. After a failed write (the client
// went away or did not read within WriteTimeout) every call returns that
// error; the caller should stop streaming.
func (w *Writer) Send(e Event) error {
	if err := e.validate(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.openLocked(); err != nil {
		return err
	}
	w.buf = AppendEvent(w.buf[:0], e)
	return w.writeLocked(w.buf)
}

// Comment writes a comment (": text" lines), which clients ignore except
// as a sign of life, and flushes it.
func (w *Writer) Comment(text string) error {
	if !utf8.ValidString(text) {
		return errors.New("sse: comment text is not valid UTF-8")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.openLocked(); err != nil {
		return err
	}
	w.buf = appendComment(w.buf[:0], text)
	return w.writeLocked(w.buf)
}

// Err returns the error that made the Writer unusable, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops the heartbeats and waits for their goroutine. It writes
// nothing and does not end the response (returning from the handler
// does). Later calls to Send and Comment fail. Close is idempotent.
func (w *Writer) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	opened := w.opened
	close(w.stop)
	w.mu.Unlock()
	if opened {
		<-w.stopped
	}
}

// writeLocked writes b and flushes it under the write deadline.
func (w *Writer) writeLocked(b []byte) error {
	if err := context.Cause(w.ctx); err != nil {
		w.err = fmt.Errorf("sse: client gone: %w", err)
		return w.err
	}
	if err := w.setDeadline(time.Now().Add(w.writeTimeout)); err != nil {
		return err
	}
	if _, err := w.rw.Write(b); err != nil {
		w.err = fmt.Errorf("sse: write failed (client gone or not reading within %v): %w", w.writeTimeout, err)
		return w.err
	}
	if err := w.flushLocked(); err != nil {
		return err
	}
	if cap(w.buf) > maxKeptBuf {
		w.buf = nil // an idle stream keeps no copy of a large event
	}
	return w.setDeadline(time.Time{})
}

// maxKeptBuf is the largest framing buffer a Writer keeps between events.
const maxKeptBuf = 16 << 10

func (w *Writer) flushLocked() error {
	if err := w.rc.Flush(); err != nil {
		if errors.Is(err, http.ErrNotSupported) {
			w.err = errors.New("sse: the ResponseWriter cannot flush, so events would sit in a buffer; pass the server's ResponseWriter, or a wrapper with Flush or Unwrap")
		} else {
			w.err = fmt.Errorf("sse: flush failed (client gone or not reading within %v): %w", w.writeTimeout, err)
		}
		return w.err
	}
	w.lastWrite = time.Now()
	return nil
}

// setDeadline sets the connection's write deadline when the Writer has a
// write timeout; a ResponseWriter without deadlines (a test recorder) is
// written without one.
func (w *Writer) setDeadline(t time.Time) error {
	if w.writeTimeout < 0 {
		return nil
	}
	err := w.rc.SetWriteDeadline(t)
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		w.err = fmt.Errorf("sse: cannot set the write deadline: %w", err)
		return w.err
	}
	return nil
}

// heartbeats sends a heartbeat comment whenever nothing was written for
// the heartbeat interval, until Close or the request's end.
func (w *Writer) heartbeats() {
	defer close(w.stopped)
	t := time.NewTimer(w.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		if w.closed || w.err != nil {
			w.mu.Unlock()
			return
		}
		next := w.heartbeat - time.Since(w.lastWrite)
		if next <= 0 {
			w.buf = append(w.buf[:0], ": heartbeat\n"...)
			if w.writeLocked(w.buf) != nil {
				w.mu.Unlock()
				return
			}
			next = w.heartbeat
		}
		w.mu.Unlock()
		t.Reset(next)
	}
}

func (e Event) validate() error {
	if strings.ContainsAny(e.Event, "\r\n") {
		return fmt.Errorf("sse: event type %q contains a line break; event types are one line", e.Event)
	}
	if strings.ContainsAny(e.ID, "\r\n\x00") {
		return fmt.Errorf("sse: event id %q contains CR, LF or NUL; clients would drop or split it", e.ID)
	}
	if !utf8.ValidString(e.Event) || !utf8.ValidString(e.ID) {
		return errors.New("sse: event type or id is not valid UTF-8")
	}
	if !utf8.Valid(e.Data) {
		return fmt.Errorf("sse: data of event %q is not valid UTF-8; clients would replace the bad bytes", e.Event)
	}
	if e.Retry < 0 {
		return fmt.Errorf("sse: retry %v is negative", e.Retry)
	}
	return nil
}

// AppendEvent appends the wire form of e to b and returns it: optional
// event: and id: lines, one data: line per line of the data, an optional
// retry: line and the blank line that ends the event. It does not check e
// (Send does); callers framing events themselves must keep CR, LF and NUL
// out of the type and id.
func AppendEvent(b []byte, e Event) []byte {
	if e.Event != "" {
		b = append(b, "event: "...)
		b = append(b, e.Event...)
		b = append(b, '\n')
	}
	if e.ID != "" {
		b = append(b, "id: "...)
		b = append(b, e.ID...)
		b = append(b, '\n')
	}
	data := e.Data
	for {
		// The space after the colon is always written, so a line that
		// starts with a space keeps it (readers strip exactly one).
		b = append(b, "data: "...)
		i := indexLineBreak(data)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	if e.Retry > 0 {
		b = fmt.Appendf(b, "retry: %d\n", e.Retry.Milliseconds())
	}
	return append(b, '\n')
}

func appendComment(b []byte, text string) []byte {
	data := []byte(text)
	for {
		b = append(b, ": "...)
		i := indexLineBreak(data)
		if i < 0 {
			b = append(b, data...)
			return append(b, '\n')
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}

func indexLineBreak(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}
