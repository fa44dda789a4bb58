// Package telemetry is the agent service's observability: OpenTelemetry
// spans for requests, runs, steps, nodes, model calls and tool calls;
// Prometheus metrics served at /metrics; and a log handler that adds the
// tenant, thread, run and trace IDs of the context to every line.
//
// It adapts the engine's hooks (graph.Observer, which llm.Call and the tool
// node report to) and the run service's (runs.Hooks): the engine imports
// neither OpenTelemetry nor Prometheus.
package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Telemetry.
type Config struct {
	// TracerProvider makes the spans; nil makes none (no span is started,
	// nothing is allocated for them).
	TracerProvider trace.TracerProvider
	// QueueDepth counts the runs waiting to start, for the queue depth
	// gauge, read at each scrape (nil: the gauge is not served).
	QueueDepth func(ctx context.Context) (int, error)
	// Limits names the limits requests can be refused over; each one's
	// refused-requests count is served from the start, at 0.
	Limits []string
}

// Telemetry holds the service's tracer and metrics.
type Telemetry struct {
	tracer trace.Tracer // nil: tracing is off
	prop   propagation.TraceContext
	reg    *prometheus.Registry
	m      metrics
	// requests is m.requests with its counters kept by label.
	requests *requestCounters
}

// metrics are the service's Prometheus metrics.
type metrics struct {
	runs       *prometheus.CounterVec   // graph, status
	runSeconds *prometheus.HistogramVec // graph, status
	waitSecs   prometheus.Histogram
	nodeSecs   *prometheus.HistogramVec // graph, node
	tokens     *prometheus.CounterVec   // model, direction
	streams    prometheus.Gauge
	takeovers  prometheus.Counter
	requests   *prometheus.CounterVec // method, route, code
	refused    *prometheus.CounterVec // limit
	held       prometheus.Counter
}

// latencyBuckets span a fast node (a millisecond) to a long agent run (ten
// minutes).
var latencyBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// New returns a Telemetry with a registry of its own (so that several
// servers in one process do not collide), holding the service's metrics
// and the Go runtime's and the process's.
func New(cfg Config) *Telemetry {
	t := &Telemetry{reg: prometheus.NewRegistry()}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer("github.com/trellis-agents/trellis/server")
	}
	t.m = metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_runs_total", Help: "Runs that ended, by graph and terminal status (success, error, timeout, interrupted).",
		}, []string{"graph", "status"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trellis_run_duration_seconds", Help: "How long runs executed on this worker, from claim to end, by graph and status.",
			Buckets: latencyBuckets,
		}, []string{"graph", "status"}),
		waitSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "trellis_queue_wait_seconds", Help: "How long runs waited in the queue: from creation (or their after_seconds start) to a worker starting them.",
			Buckets: latencyBuckets,
		}),
		nodeSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trellis_node_duration_seconds", Help: "How long node executions took (retries included), by graph and node.",
			Buckets: latencyBuckets,
		}, []string{"graph", "node"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_model_tokens_total", Help: "Tokens of model calls, by model and direction (input, output).",
		}, []string{"model", "direction"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trellis_open_streams", Help: "Server-sent event streams open now.",
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trellis_takeovers_total", Help: "Runs this worker took over after their worker's lease expired.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_http_requests_total", Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trellis_requests_refused_total", Help: "Requests refused over a per-tenant limit, by limit: rate and streams (429), body_size (413), body_timeout (408).",
		}, []string{"limit"}),
		held: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trellis_runs_held_at_limit_total", Help: "Times a run ready to start was held back because its tenant had limits.max_concurrent_runs runs running; it stays pending and is tried again, and counts at each try.",
		}),
	}
	t.requests = &requestCounters{vec: t.m.requests, m: map[requestKey]prometheus.Counter{}}
	for _, l := range cfg.Limits {
		t.m.refused.WithLabelValues(l)
	}
	t.reg.MustRegister(t.m.runs, t.m.runSeconds, t.m.waitSecs, t.m.nodeSecs, t.m.tokens, t.m.streams, t.m.takeovers, t.m.requests,
		t.m.refused, t.m.held,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.QueueDepth != nil {
		t.reg.MustRegister(&depthCollector{
			desc:  prometheus.NewDesc("trellis_queue_depth", "Runs waiting to start (pending, their start time reached), across all workers.", nil, nil),
			count: cfg.QueueDepth,
		})
	}
	return t
}

// Registry is the registry /metrics serves.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// Tracing reports whether spans are made.
func (t *Telemetry) Tracing() bool { return t.tracer != nil }

// Takeover counts a run this worker took over.
func (t *Telemetry) Takeover() { t.m.takeovers.Inc() }

// Refused counts a request refused over the limit named limit.
func (t *Telemetry) Refused(limit string) { t.m.refused.WithLabelValues(limit).Inc() }

// HeldAtLimit counts a run held back by its tenant's concurrent-run limit.
func (t *Telemetry) HeldAtLimit() { t.m.held.Inc() }

// depthCollector reads the queue depth at each scrape; a failed read
// leaves the gauge out of that scrape rather than failing it.
type depthCollector struct {
	desc  *prometheus.Desc
	count func(ctx context.Context) (int, error)
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}
