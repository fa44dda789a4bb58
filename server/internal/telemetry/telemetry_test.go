package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The log handler adds the context's IDs to records logged with it, and
// nothing to records without; loggers derived with With and WithGroup
// keep doing it.
func TestLogHandlerAddsContextIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(withLogFields(context.Background(), &logFields{tenant: "acme", thread: "th", run: "r1"}), "s")
	defer span.End()
	log.InfoContext(ctx, "inside")
	log.Info("outside")
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	in := lines[0]
	if in["tenant"] != "acme" || in["thread_id"] != "th" || in["run_id"] != "r1" || in["component"] != "x" ||
		in["trace_id"] != span.SpanContext().TraceID().String() || in["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("inside: %v", in)
	}
	for _, k := range []string{"tenant", "thread_id", "run_id", "trace_id"} {
		if _, ok := lines[1][k]; ok {
			t.Errorf("outside has %s: %v", k, lines[1])
		}
	}
	if _, ok := LogHandler(LogHandler(slog.DiscardHandler)).(ctxHandler); !ok {
		t.Error("LogHandler of its own handler is not a ctxHandler")
	}
	if inner := LogHandler(LogHandler(slog.DiscardHandler)).(ctxHandler).Handler; inner != slog.DiscardHandler {
		t.Error("LogHandler wrapped its own handler twice")
	}
}

// A failing queue depth leaves the gauge out of the scrape, which still
// answers 200 with the other metrics; other methods get the fallback.
func TestMetricsHandler(t *testing.T) {
	tel := New(Config{QueueDepth: func(context.Context) (int, error) { return 0, errors.New("database down") }})
	h := tel.MetricsHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMethodNotAllowed) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !strings.Contains(string(body), "trellis_open_streams 0") || strings.Contains(string(body), "trellis_queue_depth ") {
		t.Errorf("GET: %d\n%s", rec.Code, body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", rec.Code)
	}
}

// Unknown methods are counted as _OTHER, requests the mux did not match
// as route "unmatched", and an event stream is open only while its
// handler runs.
func TestMiddlewareCountsRequestsAndStreams(t *testing.T) {
	tel := New(Config{})
	var during float64
	h := tel.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			during = gaugeValue(t, tel)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/pot", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/stream", nil))
	if during != 1 {
		t.Errorf("open streams during the stream: %v, want 1", during)
	}
	if after := gaugeValue(t, tel); after != 0 {
		t.Errorf("open streams after: %v, want 0", after)
	}
	fams, err := tel.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "trellis_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == "_OTHER" && labels["route"] == "unmatched" && labels["code"] == "404" && m.GetCounter().GetValue() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Error("no trellis_http_requests_total{method=_OTHER,route=unmatched,code=404} 1")
	}
}

func gaugeValue(t *testing.T, tel *Telemetry) float64 {
	t.Helper()
	fams, err := tel.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "trellis_open_streams" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no trellis_open_streams")
	return 0
}
