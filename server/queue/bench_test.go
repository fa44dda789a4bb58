package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkEnqueueToAdvance measures the time from the start of Enqueue to
// the start of the Advance call it causes, one thread at a time (an idle
// queue, as a single user meets it), and reports its percentiles.
func BenchmarkEnqueueToAdvance(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			started := make(chan time.Time, 1)
			cfg := be.open(b)
			cfg.Advance = func(context.Context, string, string) (Result, error) {
				started <- time.Now()
				return Result{Outcome: Done}, nil
			}
			q := start(b, cfg)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := q.Enqueue(ctx, "bench", fmt.Sprintf("thread-%d", i)); err != nil {
					b.Fatal(err)
				}
				select {
				case t1 := <-started:
					lat = append(lat, t1.Sub(t0))
				case <-time.After(10 * time.Second):
					b.Fatal("Advance was not called")
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkThroughput enqueues b.N distinct threads from 10 goroutines and
// reports how many jobs per second reach Advance and complete.
func BenchmarkThroughput(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			var done sync.WaitGroup
			cfg := be.open(b)
			cfg.Advance = func(context.Context, string, string) (Result, error) {
				done.Done()
				return Result{Outcome: Done}, nil
			}
			q := start(b, cfg)
			ctx := context.Background()
			done.Add(b.N)
			var next atomic.Int64
			b.ResetTimer()
			t0 := time.Now()
			var senders sync.WaitGroup
			for range 10 {
				senders.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := q.Enqueue(ctx, "bench", fmt.Sprintf("tp-%d", i)); err != nil {
							b.Error(err)
							done.Done()
						}
					}
				})
			}
			senders.Wait()
			done.Wait()
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "jobs/s")
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
