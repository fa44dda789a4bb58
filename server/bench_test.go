package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/trellis-agents/trellis/graph"
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
			r := benchServer(b)
			var n atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism((clients + 1) / 2) // GOMAXPROCS is 2 here
			b.ResetTimer()
			start := time.Now()
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
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "runs/s")
			reportLatency(b, lat)
		})
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
