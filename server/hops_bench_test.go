package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/trace"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/internal/hoptrace"
	"github.com/trellis-agents/trellis/server/internal/inline"
)

// hopPoints are the marks of one runs/wait, in the order they happen
// (server/internal/hoptrace).
var hopPoints = []string{"handler", "accepted", "handoff", "execute", "first-step", "finished", "followed", "answered"}

// BenchmarkRunsWaitHops is BenchmarkRunsWait with the path's hops marked:
// for each it reports the median time since the client sent the request,
// in microseconds, and the client's own end ("client-us"). The sub-
// benchmarks run the run on the waiting handler's goroutine (inline) and
// on a goroutine of the queue's (handoff).
func BenchmarkRunsWaitHops(b *testing.B) {
	for _, mode := range []string{"inline", "handoff"} {
		b.Run(mode, func(b *testing.B) {
			defer inline.SetOff(mode == "handoff")()
			r := benchServer(b)
			var (
				mu  sync.Mutex
				t0  time.Time
				cur map[string]time.Duration
			)
			defer hoptrace.Set(func(point string) {
				now := time.Now()
				trace.Log(context.Background(), "hop", point)
				mu.Lock()
				if cur != nil {
					if _, seen := cur[point]; !seen {
						cur[point] = now.Sub(t0)
					}
				}
				mu.Unlock()
			})()
			at := map[string][]time.Duration{}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				mu.Lock()
				t0, cur = time.Now(), map[string]time.Duration{}
				mu.Unlock()
				hopsWait(b, r.url, fmt.Sprintf("h-%d", i), os.Getenv("TRELLIS_BENCH_DURABILITY"))
				mu.Lock()
				cur["client"] = time.Since(t0)
				for p, d := range cur {
					at[p] = append(at[p], d)
				}
				cur = nil
				mu.Unlock()
			}
			b.StopTimer()
			for _, p := range append(slices.Clone(hopPoints), "client") {
				if ds := at[p]; len(ds) > 0 {
					slices.Sort(ds)
					b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), p+"-us")
				}
			}
		})
	}
}

// hopsWait is benchWait with the run's durability ("" for the default).
func hopsWait(b *testing.B, url, thread, durability string) {
	body := map[string]any{"assistant_id": "echo", "input": map[string]any{"log": []string{"hi"}}, "if_not_exists": "create"}
	if durability != "" {
		body["durability"] = durability
	}
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url+"/threads/"+thread+"/runs/wait", "application/json", bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("echo hi")) {
		b.Fatalf("runs/wait: %d %s", resp.StatusCode, out)
	}
}
