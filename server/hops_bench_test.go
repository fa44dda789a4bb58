package server

import (
	"context"
	"fmt"
	"runtime/trace"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/internal/hoptrace"
)

// hopPoints are the marks of one runs/wait, in the order they happen
// (server/internal/hoptrace).
var hopPoints = []string{"handler", "accepted", "handoff", "execute", "first-step", "finished", "followed", "answered"}

// BenchmarkRunsWaitHops is BenchmarkRunsWait with the path's hops marked:
// for each it reports the median time since the client sent the request,
// in microseconds, and the client's own end ("client-us"). With
// -test.trace the marks are also user logs ("hop") in the execution
// trace, for the distribution of each hop.
func BenchmarkRunsWaitHops(b *testing.B) {
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
		benchWait(b, r.url, fmt.Sprintf("h-%d", i))
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
}
