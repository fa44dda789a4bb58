package telemetry

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Middleware wraps the whole API: a server span per request (joining the
// caller's trace when the request carries a traceparent header), the
// request's log fields in its context (filled in by Route), the count of
// requests and the open-streams gauge.
func (t *Telemetry) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The log fields and the recorder in one allocation.
		st := &requestState{rec: recorder{ResponseWriter: w, t: t}}
		rec := &st.rec
		ctx := withLogFields(r.Context(), &st.f)
		var span trace.Span
		method := knownMethod(r.Method)
		if t.tracer != nil {
			ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(method), semconv.URLPath(r.URL.Path)))
		}
		defer func() {
			if rec.stream {
				t.m.streams.Dec()
			}
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
		code := rec.code()
		route := st.f.route
		if route == "" {
			route = "unmatched"
		}
		t.requests.counter(method, route, code).Inc()
		if span != nil {
			span.SetAttributes(semconv.HTTPResponseStatusCode(code))
			if code >= 500 {
				span.SetStatus(codes.Error, http.StatusText(code))
			}
			span.End()
		}
	})
}

// requestState is what Middleware keeps per request.
type requestState struct {
	f   logFields
	rec recorder
}

// requestCounters hands out trellis_http_requests_total's counter of a
// method, route and status, each found in the vector once: the vector's
// own lookup hashes the three labels (and the status is formatted) on
// every request.
type requestCounters struct {
	vec *prometheus.CounterVec // method, route, code
	mu  sync.RWMutex
	m   map[requestKey]prometheus.Counter
}

type requestKey struct {
	method, route string
	code          int
}

func (c *requestCounters) counter(method, route string, code int) prometheus.Counter {
	k := requestKey{method, route, code}
	c.mu.RLock()
	ctr, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return ctr
	}
	ctr = c.vec.WithLabelValues(method, route, strconv.Itoa(code))
	c.mu.Lock()
	c.m[k] = ctr
	c.mu.Unlock()
	return ctr
}

// knownMethod keeps the method label and attribute to the standard
// methods, as the HTTP conventions ask.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// Route wraps a route's handler (inside the mux, where the pattern and
// path values are known): it names the request's span after the route and
// fills in the request's log fields, tenant from the tenant function.
func (t *Telemetry) Route(tenant func(*http.Request) string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := fieldsFrom(r.Context()); f != nil {
			f.route = r.Pattern
			f.tenant = tenant(r)
			f.thread = r.PathValue("thread_id")
			f.run = r.PathValue("run_id")
		}
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			route := r.Pattern
			if _, path, ok := strings.Cut(route, " "); ok {
				route = path
			}
			span.SetName(r.Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		h.ServeHTTP(w, r)
	})
}

// MetricsHandler serves the registry in Prometheus' text format (GET and
// HEAD only). A collector that fails (the queue depth's database read)
// leaves its metric out of that scrape instead of failing it.
func (t *Telemetry) MetricsHandler(notAllowed http.Handler) http.Handler {
	h := promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notAllowed.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// recorder notes the status and whether the answer is an event stream;
// Unwrap lets http.ResponseController reach the connection.
type recorder struct {
	http.ResponseWriter
	t      *Telemetry
	status int
	stream bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		if code == http.StatusOK && strings.HasPrefix(r.Header().Get("Content-Type"), "text/event-stream") {
			r.stream = true
			r.t.m.streams.Inc()
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Flush flushes the connection (for handlers that assert http.Flusher).
func (r *recorder) Flush() {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// StatusCode is the status answered so far: 200 when the handler wrote
// nothing or only a body, 0 never. The request log reads it instead of
// wrapping the writer again.
func (r *recorder) StatusCode() int { return r.code() }

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
