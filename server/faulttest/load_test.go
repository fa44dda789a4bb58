package faulttest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load runs runs/wait of the one-node echo graph from clients concurrent
// clients, spread over urls, for d; every answer must be 200 with the
// echo. It returns runs/s and the p50 and p99 latencies.
func load(t *testing.T, urls []string, clients int, d time.Duration, prefix string) (float64, time.Duration, time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var bad atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for j := 0; time.Now().Before(stop); j++ {
				body := []byte(`{"assistant_id":"echo","input":{},"if_not_exists":"create"}`)
				t0 := time.Now()
				resp, err := hc.Post(fmt.Sprintf("%s/threads/%s-%d-%d/runs/wait", urls[(i+j)%len(urls)], prefix, i, j), "application/json", bytes.NewReader(body))
				if err != nil {
					bad.Add(1)
					continue
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(out, []byte(`"echo"`)) {
					if bad.Add(1) == 1 {
						t.Errorf("runs/wait: %d %s", resp.StatusCode, out)
					}
					continue
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if bad.Load() > 0 {
		t.Errorf("%s: %d failed requests", prefix, bad.Load())
	}
	if len(lat) == 0 {
		t.Fatalf("%s: no run answered", prefix)
	}
	slices.Sort(lat)
	return float64(n.Load()) / elapsed.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100]
}

// Throughput of runs/wait with 50 clients on 1, 2 and 3 replicas of one
// PostgreSQL, and on one process on the embedded SQLite. Figures only:
// the replicas share this machine's two cores.
func TestThroughputByReplicas(t *testing.T) {
	c := newCluster(t)
	const clients, each = 50, 8 * time.Second
	var urls []string
	for k, name := range []string{"r1", "r2", "r3"} {
		urls = append(urls, c.start(name))
		load(t, urls, clients, time.Second, fmt.Sprintf("warm%d", k)) // connections, assistants, caches
		rps, p50, p99 := load(t, urls, clients, each, fmt.Sprintf("pg%d", k+1))
		t.Logf("FIGURES load: postgres replicas=%d clients=%d runs/s=%.0f per-replica=%.0f p50=%v p99=%v",
			k+1, clients, rps, rps/float64(k+1), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	}
	for _, name := range []string{"r1", "r2", "r3"} {
		c.signal(name, 15) // SIGTERM
	}
	lite := c.startWith("lite", filepath.Join(c.dir, "lite.db"))
	load(t, []string{lite}, clients, time.Second, "warml")
	rps, p50, p99 := load(t, []string{lite}, clients, each, "lite")
	t.Logf("FIGURES load: sqlite replicas=1 clients=%d runs/s=%.0f p50=%v p99=%v", clients, rps, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
}
