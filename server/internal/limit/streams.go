package limit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Streams counts every response that holds a connection open as an event
// stream against the tenant's maximum, whatever the wire: it wraps every
// route of the server (not only the event-stream ones), so a handler that
// answers with text/event-stream is counted however it writes it.
//
// A route whose every success is a stream (stream true) takes the
// tenant's slot before the handler runs, and a tenant over the maximum
// gets 429 with nothing done. On any other route the slot is taken
// either by the handler, before it does anything it cannot undo (Take,
// answering the refusal in its wire's own error shape), or at the latest
// when the response starts as text/event-stream: then a tenant over the
// maximum gets the 429 problem instead of the stream, and the handler's
// later writes fail. The slot is given back when the handler returns.
func Streams(c *Counter, tenant TenantFunc, stream bool, next http.Handler) http.Handler {
	if c == nil || c.max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := &slot{c: c, tenant: tenant(r)}
		defer s.release()
		if stream && !s.take() {
			s.refuse(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), slotKey{}, s))
		next.ServeHTTP(&streamWriter{ResponseWriter: w, r: r, s: s}, r)
	})
}

// ErrStreamRefused is the error a handler's writes return after the
// response was turned into a 429 because the tenant has its maximum of
// streams open.
var ErrStreamRefused = errors.New("limit: the response was refused: the tenant has its maximum of event streams open")

type slotKey struct{}

// Take takes the request's stream slot before a handler starts a stream,
// so that a refusal comes before the handler does anything (creates a
// run). It reports false, with the refusal's detail, when the tenant has
// its maximum open; the handler answers in its wire's error shape with
// 429 (and Retry-After). Take is true for a request with no limit, and
// taking twice takes one slot.
func Take(r *http.Request) (ok bool, detail string) {
	s, _ := r.Context().Value(slotKey{}).(*slot)
	if s == nil {
		return true, ""
	}
	if !s.take() {
		s.c.refused.tell(LimitStreams)
		return false, s.detail()
	}
	return true, ""
}

// slot is one request's claim on its tenant's streams.
type slot struct {
	c      *Counter
	tenant string

	mu    sync.Mutex
	taken bool
}

func (s *slot) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken {
		return true
	}
	s.taken = s.c.Acquire(s.tenant)
	return s.taken
}

func (s *slot) held() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taken
}

func (s *slot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken {
		s.taken = false
		s.c.Release(s.tenant)
	}
}

func (s *slot) detail() string {
	return fmt.Sprintf("too many open event streams: this tenant may keep %d open at once; close one (or join the run later)", s.c.max)
}

func (s *slot) refuse(w http.ResponseWriter, r *http.Request) {
	TooMany(w, r, time.Second, s.detail())
	s.c.refused.tell(LimitStreams)
}

// streamWriter takes the slot when the response starts as an event
// stream, and answers 429 instead when the tenant is over its maximum.
type streamWriter struct {
	http.ResponseWriter
	r *http.Request
	s *slot

	started bool
	refused bool
}

func (w *streamWriter) WriteHeader(code int) {
	if w.started {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.started = true
	h := w.ResponseWriter.Header()
	if code == http.StatusOK && strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") && !w.s.held() && !w.s.take() {
		w.refused = true
		for _, k := range []string{"Content-Type", "Cache-Control", "X-Accel-Buffering", "Location", "Content-Location"} {
			h.Del(k)
		}
		w.s.refuse(w.ResponseWriter, w.r)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *streamWriter) Write(b []byte) (int, error) {
	if !w.started {
		if w.ResponseWriter.Header().Get("Content-Type") == "" {
			// What net/http would sniff; an event stream always names
			// its type.
			w.ResponseWriter.Header().Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	if w.refused {
		return 0, ErrStreamRefused
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes, starting the response as Write does; after a
// refusal it fails, so a stream writer stops.
func (w *streamWriter) FlushError() error {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.refused {
		return ErrStreamRefused
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for handlers that assert http.Flusher.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection (write
// deadlines).
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
