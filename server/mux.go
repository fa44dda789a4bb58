package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/server/a2aapi"
	"github.com/trellis-agents/trellis/server/aguiapi"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/mcpapi"
	"github.com/trellis-agents/trellis/server/openaiapi"
	"github.com/trellis-agents/trellis/server/web"
)

// newMux mounts the API's, the OpenAI, AG-UI and A2A wires' and the MCP endpoint's handlers, each wrapped by
// wrap, on the route table, the web page (GET / and /ui/...) and the
// problem fallback on every other path. Every route of the table has its
// handler; a build where one is missing (or a handler names no route)
// fails here, at start. Every route counts the responses it answers as an
// event stream against streams (per tenant): the event-stream routes
// before their handler runs, the others (a streamed chat completion, an
// MCP answer sent as SSE) when the stream starts (limit.Streams).
func newMux(a *api.API, oa *openaiapi.Handler, ag *aguiapi.Handler, mh *mcpapi.Handler, aa *a2aapi.Handler, wrap func(http.Handler) http.Handler, streams *limit.Counter) (*routeMux, error) {
	routes := spec.Routes()
	mux := &routeMux{ServeMux: http.NewServeMux()}
	handlers := a.Handlers()
	for id, h := range oa.Handlers() {
		handlers[id] = h
	}
	mcpHandler := mh.HTTPHandler() // one handler: the transport dispatches on the method
	for _, id := range []string{"mcpPost", "mcpGet", "mcpDelete"} {
		handlers[id] = mcpHandler
	}
	for id, h := range ag.Handlers() {
		handlers[id] = h
	}
	for id, h := range aa.Handlers() {
		handlers[id] = h
	}
	for _, r := range routes {
		if h := handlers[r.OperationID]; h != nil {
			handlers[r.OperationID] = limit.Streams(streams, requestTenant, r.Stream, h)
		}
	}
	for id, h := range handlers {
		handlers[id] = wrap(h)
	}
	if err := spec.Register(mux, routes, handlers); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	mux.Handle("/", spec.Fallback(routes))
	web.Mount(mux) // the page at / and its assets under /ui/, not API routes
	return mux, nil
}

// routeMux is the server's mux, remembering the patterns registered on it
// so that a test can check every one against the API's document (and
// walk them all with another tenant's key).
type routeMux struct {
	*http.ServeMux
	patterns []string
}

// Handle registers handler for pattern and records the pattern.
func (m *routeMux) Handle(pattern string, handler http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, handler)
}

// HandleFunc registers fn for pattern and records the pattern.
func (m *routeMux) HandleFunc(pattern string, fn func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(fn))
}

// logRequests logs each request's method, path, status and duration at
// debug level, and 5xx answers as errors. Under the telemetry middleware
// (the server's wiring) it reads the status its writer already records
// rather than wrapping the writer again, and a record the logger would
// drop is not built.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var code int
		if st, ok := w.(statusCoder); ok {
			next.ServeHTTP(w, r)
			code = st.StatusCode()
		} else {
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			code = rec.code()
		}
		level := slog.LevelDebug
		if code >= 500 {
			level = slog.LevelError
		}
		if log.Enabled(r.Context(), level) {
			log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "status", code, "duration", time.Since(start))
		}
	})
}

// statusCoder is a ResponseWriter that records the status it answered
// (the telemetry middleware's).
type statusCoder interface {
	http.ResponseWriter
	StatusCode() int
}

// statusRecorder notes the status; Unwrap lets http.ResponseController
// (flushes and write deadlines of streams) reach the connection.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Flush flushes the connection (for handlers that assert http.Flusher).
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}
