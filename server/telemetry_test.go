package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
)

// agentSpec is a ReAct agent on a scripted model: one tool round
// (weather), then an answer, with fixed usage.
func agentSpec() runs.GraphSpec {
	return runs.GraphSpec{Description: "a scripted agent with a weather tool", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		// Two runs' worth, one after the other (the graph, and so the
		// script, is shared by the assistant's runs).
		var turns []llmtest.Turn
		for range 2 {
			turns = append(turns,
				llmtest.ToolCalls(llmtest.Call("weather", `{"city":"Oslo"}`)).WithUsage(llm.Usage{InputTokens: 11, OutputTokens: 5}),
				llmtest.Text("Sunny in Oslo.").WithUsage(llm.Usage{InputTokens: 30, OutputTokens: 4}))
		}
		m := llmtest.New(llmtest.WithName("test:model-a")).Reply(turns...)
		weather := tool.MustFunc("weather", "the weather in a city", func(ctx context.Context, a struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny", nil
		}, tool.ReadOnly())
		return react.New(react.Config{Model: m, Tools: []tool.Tool{weather}})
	}}
}

// startAgent serves the agent graph (and echo) with cfg.
func startAgent(t *testing.T, cfg Config) *running {
	t.Helper()
	cfg.Database = filepath.Join(t.TempDir(), "trellis.db")
	cfg.Addr = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register("agent", agentSpec()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-r.done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	r.url = "http://" + s.Addr()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// agentWait posts runs/wait for the agent on a new thread, with headers.
func agentWait(t *testing.T, url, thread string, header http.Header) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"assistant_id": "agent", "if_not_exists": "create",
		"input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "Weather in Oslo?"}}},
	})
	req, _ := http.NewRequest(http.MethodPost, url+"/threads/"+thread+"/runs/wait", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "Sunny in Oslo.") {
		t.Fatalf("runs/wait: %d %s", resp.StatusCode, out)
	}
	return string(out)
}

// ended waits for a span named name to end and returns the ended spans.
func ended(t *testing.T, rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := rec.Ended()
		for _, s := range spans {
			if s.Name() == name {
				return spans
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name())
			}
			t.Fatalf("no span %q ended; ended: %v", name, names)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestRunSpanTree runs the agent through runs/wait with a traceparent and
// checks the span tree: the caller's trace → request → run → step → node →
// model call (GenAI attributes) and tool call, all in one trace.
func TestRunSpanTree(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	r := startAgent(t, Config{TracerProvider: tp})

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	agentWait(t, r.url, "t1", http.Header{"Traceparent": {caller}})
	spans := ended(t, rec, "POST /threads/{thread_id}/runs/wait")

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
		if got := s.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %q is in trace %s, not the caller's", s.Name(), got)
		}
	}
	parent := func(s sdktrace.ReadOnlySpan) string {
		if p, ok := byID[s.Parent().SpanID()]; ok {
			return p.Name()
		}
		if s.Parent().SpanID().String() == "00f067aa0ba902b7" {
			return "caller"
		}
		return "?"
	}
	find := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	tree := map[string]string{}
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "GET ") {
			continue
		}
		tree[s.Name()] = parent(s)
	}
	want := map[string]string{
		"POST /threads/{thread_id}/runs/wait": "caller",
		"invoke_agent agent":                  "POST /threads/{thread_id}/runs/wait",
		"step 1":                              "invoke_agent agent",
		"step 2":                              "invoke_agent agent",
		"step 3":                              "invoke_agent agent",
		"node model":                          "step 3", // the last of its two
		"node tools":                          "step 2",
		"chat test:model-a":                   "node model",
		"execute_tool weather":                "node tools",
	}
	for name, p := range want {
		if tree[name] != p {
			t.Errorf("span %q has parent %q, want %q (tree: %v)", name, tree[name], p, tree)
		}
	}
	if n := len(find("chat test:model-a")); n != 2 {
		t.Errorf("%d model call spans, want 2", n)
	}
	var in, out int64
	var reasons []string
	for _, s := range find("chat test:model-a") {
		a := attrs(s)
		if a["gen_ai.request.model"].AsString() != "test:model-a" || a["gen_ai.response.model"].AsString() != "model-a" {
			t.Errorf("model span attributes %v", a)
		}
		in += a["gen_ai.usage.input_tokens"].AsInt64()
		out += a["gen_ai.usage.output_tokens"].AsInt64()
		reasons = append(reasons, a["gen_ai.response.finish_reasons"].AsStringSlice()...)
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("model span kind %v", s.SpanKind())
		}
	}
	if in != 41 || out != 9 {
		t.Errorf("model spans count %d tokens in, %d out; want 41, 9", in, out)
	}
	if strings.Join(reasons, ",") != "tool_calls,stop" {
		t.Errorf("finish reasons %v, want tool_calls then stop", reasons)
	}
	toolSpan := find("execute_tool weather")[0]
	if a := attrs(toolSpan); a["gen_ai.tool.name"].AsString() != "weather" || a["gen_ai.tool.call.id"].AsString() == "" {
		t.Errorf("tool span attributes %v", a)
	}
	run := find("invoke_agent agent")[0]
	a := attrs(run)
	if a["trellis.run.status"].AsString() != "success" || a["trellis.thread.id"].AsString() != "t1" || a["trellis.run.id"].AsString() == "" {
		t.Errorf("run span attributes %v", a)
	}
	req := find("POST /threads/{thread_id}/runs/wait")[0]
	if a := attrs(req); a["http.response.status_code"].AsInt64() != 200 || a["http.route"].AsString() != "/threads/{thread_id}/runs/wait" {
		t.Errorf("request span attributes %v", a)
	}
}

// TestNoTracerNoSpans checks that without a tracer nothing is stored with
// runs to link them (no trace context in their kwargs).
func TestNoTracerNoSpans(t *testing.T) {
	r := startAgent(t, Config{})
	agentWait(t, r.url, "t1", nil)
	if r.s.tel.Tracing() {
		t.Fatal("tracing is on without a tracer provider or endpoint")
	}
	_, body, _ := get(t, r.url+"/threads/t1/runs?select=kwargs")
	if strings.Contains(body, "trace_context") {
		t.Errorf("a run stored a trace context without tracing: %s", body)
	}
}

// scrape reads /metrics and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value finds the metric of family name whose labels include want, and
// returns its counter, gauge or histogram count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no %s with labels %v", name, want)
	return 0
}

// TestMetricsAfterRuns runs the agent twice and checks /metrics: runs by
// status, node and run latency counts, queue wait, tokens by model and
// direction, the queue depth and the open streams.
func TestMetricsAfterRuns(t *testing.T) {
	r := startAgent(t, Config{})
	agentWait(t, r.url, "t1", nil)
	agentWait(t, r.url, "t2", nil)
	fams := scrape(t, r.url)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"trellis_runs_total", map[string]string{"graph": "agent", "status": "success"}, 2},
		{"trellis_run_duration_seconds", map[string]string{"graph": "agent", "status": "success"}, 2},
		{"trellis_queue_wait_seconds", nil, 2},
		{"trellis_node_duration_seconds", map[string]string{"graph": "agent", "node": "model"}, 4},
		{"trellis_node_duration_seconds", map[string]string{"graph": "agent", "node": "tools"}, 2},
		{"trellis_model_tokens_total", map[string]string{"model": "test:model-a", "direction": "input"}, 82},
		{"trellis_model_tokens_total", map[string]string{"model": "test:model-a", "direction": "output"}, 18},
		{"trellis_queue_depth", nil, 0},
		{"trellis_open_streams", nil, 0},
		{"trellis_takeovers_total", nil, 0},
		{"trellis_http_requests_total", map[string]string{"method": "POST", "route": "POST /threads/{thread_id}/runs/wait", "code": "200"}, 2},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	resp, err := http.Post(r.url+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("POST /metrics: %d %s, want a 405 problem", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestOpenStreamsAndQueueDepth holds a run open (a blocking echo run) with
// a stream joined to it and a second run queued behind it, and checks the
// gauges while they last.
func TestOpenStreamsAndQueueDepth(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "trellis.db")}, &blocked)
	post := func(path string, body map[string]any) *http.Response {
		b, _ := json.Marshal(body)
		resp, err := http.Post(r.url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/threads/t1/runs/stream", map[string]any{"assistant_id": "echo", "if_not_exists": "create", "input": map[string]any{"log": []string{"block"}}})
	defer resp.Body.Close()
	for blocked.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	queued := post("/threads/t1/runs", map[string]any{"assistant_id": "echo", "multitask_strategy": "enqueue", "input": map[string]any{"log": []string{"x"}}})
	queued.Body.Close()
	if queued.StatusCode != http.StatusOK {
		t.Fatalf("enqueue a second run: %d", queued.StatusCode)
	}
	fams := scrape(t, r.url)
	if got := value(t, fams, "trellis_open_streams", nil); got != 1 {
		t.Errorf("open streams %v, want 1", got)
	}
	if got := value(t, fams, "trellis_queue_depth", nil); got != 1 {
		t.Errorf("queue depth %v, want 1", got)
	}
}

// logLines is a JSON log captured in memory.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) records(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestLogsCarryIDs checks that the request log line of a run's request
// and a log line a node writes during the run carry the tenant, thread,
// run and trace IDs.
func TestLogsCarryIDs(t *testing.T) {
	var lines logLines
	log := slog.New(slog.NewJSONHandler(&lines, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "trellis.db"), Logger: log, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	nodeLog := s.log
	if err := s.Register("logger", runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(testLog)
		b.AddNode("say", func(ctx context.Context, st graph.State) (graph.Output, error) {
			nodeLog.InfoContext(ctx, "node says hi")
			return graph.Writes(graph.Append(testLog, "said")), nil
		})
		b.SetEntry("say")
		b.AddEdge("say", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	<-s.Ready()
	r.url = "http://" + s.Addr()
	defer r.stop(t)

	body, _ := json.Marshal(map[string]any{"assistant_id": "logger", "if_not_exists": "create", "input": map[string]any{"log": []string{"x"}}})
	resp, err := http.Post(r.url+"/threads/th-9/runs/wait", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans := ended(t, rec, "POST /threads/{thread_id}/runs/wait")
	var trace string
	for _, sp := range spans {
		if sp.Name() == "POST /threads/{thread_id}/runs/wait" {
			trace = sp.SpanContext().TraceID().String()
		}
	}
	var sawNode, sawRequest bool
	for _, m := range lines.records(t) {
		switch m["msg"] {
		case "node says hi":
			sawNode = true
			if m["tenant"] != "default" || m["thread_id"] != "th-9" || m["run_id"] == nil || m["trace_id"] != trace {
				t.Errorf("the node's log line lacks IDs: %v", m)
			}
		case "request":
			if m["path"] != "/threads/th-9/runs/wait" {
				continue
			}
			sawRequest = true
			if m["tenant"] != "default" || m["thread_id"] != "th-9" || m["trace_id"] != trace {
				t.Errorf("the request's log line lacks IDs: %v", m)
			}
		}
	}
	if !sawNode || !sawRequest {
		t.Errorf("log lines missing (node %v, request %v): %s", sawNode, sawRequest, fmt.Sprint(lines.records(t)))
	}
}

// TestOTLPExport configures an OTLP/HTTP endpoint (a fake collector) and
// checks that a run's spans reach it, flushed at shutdown at the latest.
func TestOTLPExport(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var mu sync.Mutex
	names := map[string]bool{}
	var paths []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names[s.GetName()] = true
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer collector.Close()

	r := startAgent(t, Config{OTLPEndpoint: collector.URL})
	if !r.s.tel.Tracing() {
		t.Fatal("an OTLP endpoint did not turn tracing on")
	}
	agentWait(t, r.url, "t1", nil)
	r.stop(t) // shuts the exporter down, flushing its batch
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"POST /threads/{thread_id}/runs/wait", "invoke_agent agent", "node model", "chat test:model-a", "execute_tool weather"} {
		if !names[want] {
			t.Errorf("the collector got no span %q; got %v", want, names)
		}
	}
	for _, p := range paths {
		if p != "/v1/traces" {
			t.Errorf("spans were posted to %s, want /v1/traces", p)
		}
	}
}

// TestTakeoverMetrics takes over a run whose worker died and checks the
// metrics: one takeover, one successful run, no queue wait for it (it had
// started before), and its span marked as a takeover.
func TestTakeoverMetrics(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.db")
	ctx := context.Background()
	r := start(t, Config{Database: file}, nil) // creates the default assistant
	r.stop(t)
	d := openDB(t, file)
	if _, err := d.CreateThread(ctx, api.DefaultTenant, db.Thread{ID: "t2", Status: db.ThreadIdle}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	run, err := d.CreateRun(ctx, api.DefaultTenant, db.Run{ThreadID: "t2", AssistantID: DefaultAssistantID("echo"), Kwargs: json.RawMessage(`{"input":{"log":["x"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.ClaimRun(ctx, api.DefaultTenant, run.ID, "dead-worker", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the lease expires
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	r = start(t, Config{Database: file, SweepInterval: 50 * time.Millisecond, TracerProvider: tp}, nil)
	if got := waitRun(t, r.s.st.db, "t2", run.ID); got.Status != db.RunSuccess {
		t.Fatalf("run taken over: %s %s", got.Status, got.Error)
	}
	spans := ended(t, rec, "invoke_agent echo")
	for _, s := range spans {
		if s.Name() == "invoke_agent echo" && !attrs(s)["trellis.run.takeover"].AsBool() {
			t.Errorf("the run span is not marked as a takeover: %v", attrs(s))
		}
	}
	fams := scrape(t, r.url)
	if got := value(t, fams, "trellis_takeovers_total", nil); got != 1 {
		t.Errorf("takeovers %v, want 1", got)
	}
	if got := value(t, fams, "trellis_runs_total", map[string]string{"graph": "echo", "status": "success"}); got != 1 {
		t.Errorf("runs %v, want 1", got)
	}
	if got := value(t, fams, "trellis_queue_wait_seconds", nil); got != 0 {
		t.Errorf("queue waits %v, want none for a run taken over", got)
	}
}

// TestLimitMetrics refuses one request over each of the rate, stream and
// body-size limits, and holds a run back at the concurrent-run limit, and
// checks the counts in the metrics (read from the registry: /metrics is
// under the rate limit too).
func TestLimitMetrics(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "trellis.db"), BodyLimit: 128, ShutdownGrace: 200 * time.Millisecond,
		Limits: config.Limits{MaxConcurrentRuns: 1, RequestsPerSecond: 0.01, Burst: 3, MaxStreams: 1}}, &blocked)
	post := func(path, body string) *http.Response {
		resp, err := http.Post(r.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	stream := post("/threads/t1/runs/stream", `{"assistant_id":"echo","if_not_exists":"create","input":{"log":["block"]}}`)
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("the first stream: %d", stream.StatusCode)
	}
	until(t, "the streamed run blocks", func() bool { return blocked.Load() == 1 })
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/threads/t2/runs/stream", `{"assistant_id":"echo","if_not_exists":"create","input":{"log":["x"]}}`, http.StatusTooManyRequests}, // a second stream
		{"/threads/count", `{"metadata":{"padding":"` + strings.Repeat("x", 150) + `"}}`, http.StatusRequestEntityTooLarge},
		{"/threads/count", `{}`, http.StatusTooManyRequests}, // the burst of 3 is spent
	} {
		resp := post(c.path, c.body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("POST %s: %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
	// A second run of the tenant waits for the running one's slot.
	if _, err := r.s.svc.Create(context.Background(), r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "t3", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["block"]}`)},
	}); err != nil {
		t.Fatal(err)
	}
	until(t, "the second run is held back", func() bool { return r.s.heldAtLimit.Load() >= 1 })

	fams, err := r.s.tel.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for l, want := range map[string]float64{"rate": 1, "streams": 1, "body_size": 1, "body_timeout": 0} {
		if got := value(t, byName, "trellis_requests_refused_total", map[string]string{"limit": l}); got != want {
			t.Errorf("trellis_requests_refused_total{limit=%q} = %v, want %v", l, got, want)
		}
	}
	if got := value(t, byName, "trellis_runs_held_at_limit_total", nil); got < 1 || got > float64(r.s.heldAtLimit.Load()) {
		t.Errorf("trellis_runs_held_at_limit_total = %v, want from 1 to the %d holds counted", got, r.s.heldAtLimit.Load())
	}
	if blocked.Load() != 1 {
		t.Errorf("%d runs blocking, want 1 under a limit of 1", blocked.Load())
	}
}
