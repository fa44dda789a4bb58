package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/runs"
)

// BenchmarkRunsWait is POST /threads/{id}/runs/wait of a one-node graph
// over loopback on the embedded SQLite default, one client, each run on
// its own new thread; it reports p50 and p99 latency. Compare
// BenchmarkInvokeDirect, the same graph without the service.
func BenchmarkRunsWait(b *testing.B) {
	r := benchServer(b)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		benchWait(b, r.url, fmt.Sprintf("b-%d", i))
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkRunsWaitParallel is runs/wait from 10 and 50 concurrent
// clients; it reports runs per second.
func BenchmarkRunsWaitParallel(b *testing.B) {
	for _, clients := range []int{10, 50} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			waitParallel(b, benchServer(b), clients)
		})
	}
}

// BenchmarkRunsWaitPostgres is runs/wait from 1, 10 and 50 concurrent
// clients with the service on PostgreSQL (TRELLIS_TEST_PG_DSN, a fresh
// schema each); it reports runs per second, latency and how long runs
// waited for the pool's connections (reportPool).
// TRELLIS_BENCH_PG_PARAMS adds URL parameters to the service's database
// URL, e.g. pool_max_conns=64 to compare pool sizes.
func BenchmarkRunsWaitPostgres(b *testing.B) {
	for _, clients := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			url, _, _ := pgSchema(b, "bench")
			if extra := os.Getenv("TRELLIS_BENCH_PG_PARAMS"); extra != "" {
				url += "&" + extra
			}
			var blocked atomic.Int32
			r := start(b, Config{Database: url}, &blocked)
			before := r.s.st.pool.Stat()
			waitParallel(b, r, clients)
			reportPool(b, before, r.s.st.pool.Stat())
		})
	}
}

// reportPool reports how long a run waited for the PostgreSQL pool's
// connections between two of its Stats: the total acquire wait per run,
// and the share of acquires that found no idle connection.
func reportPool(b *testing.B, before, after *pgxpool.Stat) {
	acquires := after.AcquireCount() - before.AcquireCount()
	if acquires <= 0 || b.N == 0 {
		return
	}
	wait := after.AcquireDuration() - before.AcquireDuration()
	b.ReportMetric(float64(wait.Microseconds())/1000/float64(b.N), "pool-wait-ms/run")
	b.ReportMetric(float64(after.EmptyAcquireCount()-before.EmptyAcquireCount())/float64(acquires), "pool-empty/acquire")
	b.ReportMetric(float64(acquires)/float64(b.N), "acquires/run")
}

// waitParallel runs runs/wait against r from clients concurrent clients,
// each run on a new thread, and reports runs/s, p50 and p99.
func waitParallel(b *testing.B, r *running, clients int) {
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	if clients == 1 {
		for b.Loop() {
			t0 := time.Now()
			benchWait(b, r.url, fmt.Sprintf("p-%d", n.Add(1)))
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "runs/s")
		reportLatency(b, lat)
		return
	}
	ws := sqlitedb.ReadWriteStats()
	b.SetParallelism((clients + 1) / 2) // GOMAXPROCS is 2 here
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			benchWait(b, r.url, fmt.Sprintf("p-%d", n.Add(1)))
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	wall := time.Since(start)
	b.ReportMetric(float64(n.Load())/wall.Seconds(), "runs/s")
	reportLatency(b, lat)
	reportWriter(b, sqlitedb.ReadWriteStats().Sub(ws), wall, n.Load())
}

// reportWriter reports, for runs on SQLite, how long the one write
// connection was held per run, the fraction of the wall time it was held
// (near 1: the writer is the bound) and the transactions per physical
// commit.
func reportWriter(b *testing.B, ws sqlitedb.WriteStats, wall time.Duration, runs int64) {
	if ws.Transactions == 0 || runs == 0 {
		return
	}
	b.ReportMetric(float64(ws.Held.Microseconds())/float64(runs), "writer-us/run")
	b.ReportMetric(float64(ws.InSQL.Microseconds())/float64(runs), "writer-sql-us/run")
	b.ReportMetric(float64(ws.Committing.Microseconds())/float64(runs), "writer-commit-us/run")
	b.ReportMetric(float64(ws.Handoff.Microseconds())/float64(runs), "writer-handoff-us/run")
	b.ReportMetric(ws.Held.Seconds()/wall.Seconds(), "writer-busy")
	if ws.Commits > 0 {
		b.ReportMetric(float64(ws.Transactions)/float64(ws.Commits), "tx/commit")
	}
}

// BenchmarkRunsWaitTracing is BenchmarkRunsWait without tracing (no
// exporter configured: the default) and with every span made and batched
// to an exporter that drops them, for the cost of tracing a run.
func BenchmarkRunsWaitTracing(b *testing.B) {
	for _, traced := range []bool{false, true} {
		b.Run(fmt.Sprintf("tracing=%v", traced), func(b *testing.B) {
			cfg := Config{Database: filepath.Join(b.TempDir(), "trellis.db")}
			if traced {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				cfg.TracerProvider = tp
			}
			var blocked atomic.Int32
			r := start(b, cfg, &blocked)
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				benchWait(b, r.url, fmt.Sprintf("t-%d", i))
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkInvokeDirect is the one-node graph invoked directly with the
// same SQLite saver kind, for comparison with BenchmarkRunsWait.
func BenchmarkInvokeDirect(b *testing.B) {
	var blocked atomic.Int32
	g, err := echoGraph(&blocked).New(context.Background(), runs.Assistant{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Invoke(context.Background(), graph.Writes(graph.Append(testLog, "hi"))); err != nil {
			b.Fatal(err)
		}
	}
}

func benchServer(b *testing.B) *running {
	b.Helper()
	var blocked atomic.Int32
	return start(b, Config{Database: filepath.Join(b.TempDir(), "trellis.db")}, &blocked)
}

func benchWait(b *testing.B, url, thread string) {
	body, _ := json.Marshal(map[string]any{"assistant_id": "echo", "input": map[string]any{"log": []string{"hi"}}, "if_not_exists": "create"})
	resp, err := http.Post(url+"/threads/"+thread+"/runs/wait", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("echo hi")) {
		b.Fatalf("runs/wait: %d %s", resp.StatusCode, out)
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkFirstSSEByte is the time from sending POST
// /threads/{id}/runs/stream (one-node graph, new thread each time) to the
// first byte of the event stream; it reports p50 and p99.
func BenchmarkFirstSSEByte(b *testing.B) {
	r := benchServer(b)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		body, _ := json.Marshal(map[string]any{"assistant_id": "echo", "input": map[string]any{"log": []string{"hi"}},
			"if_not_exists": "create", "stream_mode": []string{"values"}})
		t0 := time.Now()
		resp, err := http.Post(fmt.Sprintf("%s/threads/s-%d/runs/stream", r.url, i), "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		rest, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(rest, []byte("echo hi")) {
			b.Fatalf("runs/stream: %d %s", resp.StatusCode, rest)
		}
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkIdleStreams opens 1,000 streams joined to one run that waits
// (emits nothing), over raw TCP connections, and reports the memory the
// process holds per open stream: heap and stacks after a GC, measured
// against the same process before the streams opened. The client side
// (a socket and a 4 KiB read buffer each) is in the figure too, so it is
// an upper bound on the server's share.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 1000
	var blocked atomic.Int32
	r := start(b, Config{Database: filepath.Join(b.TempDir(), "trellis.db")}, &blocked)
	body, _ := json.Marshal(map[string]any{"assistant_id": "echo", "input": map[string]any{"log": []string{"block"}}, "if_not_exists": "create"})
	resp, err := http.Post(r.url+"/threads/idle/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil || run.RunID == "" {
		b.Fatalf("create run: %v", err)
	}
	resp.Body.Close()
	for blocked.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	addr := r.url[len("http://"):]
	req := "GET /threads/idle/runs/" + run.RunID + "/stream HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	for b.Loop() {
		before := heldMemory()
		conns := make([]net.Conn, 0, streams)
		for range streams {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
			if _, err := io.WriteString(c, req); err != nil {
				b.Fatal(err)
			}
		}
		buf := make([]byte, 4096)
		for _, c := range conns {
			// Until the stream's first event (metadata) arrived.
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			var got []byte
			for !bytes.Contains(got, []byte("event: metadata")) {
				n, err := c.Read(buf)
				if err != nil {
					b.Fatalf("read a stream: %v (got %q)", err, got)
				}
				got = append(got, buf[:n]...)
			}
		}
		after := heldMemory()
		b.ReportMetric(float64(after-before)/streams/1024, "KiB/stream")
		for _, c := range conns {
			c.Close()
		}
	}
	b.StopTimer()
	cancel, _ := http.Post(r.url+"/threads/idle/runs/"+run.RunID+"/cancel", "application/json", nil)
	if cancel != nil {
		cancel.Body.Close()
	}
}

// heldMemory is heap in use plus goroutine stacks, after a collection.
func heldMemory() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}
