package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
)

// maxRunAllocs and maxRunBytes bound the allocations of one runs/wait of
// the echo graph on SQLite, counted in the whole process (the loopback
// client, the server, the queue and the database driver), averaged over
// runAllocRuns runs. Measured on 29 Nov 2026: 2,302-2,312 allocations and
// 122.8-123.6 KB with a 64-event channel per subscription; 2,302-2,311
// and 117.0-117.6 KB with the subscription's queue sized to its events.
// The bounds leave room for the noise of the queue's background work, not
// for a new cost per run.
const (
	maxRunAllocs = 2450
	maxRunBytes  = 121_000
)

// runAllocRuns is how many runs the allocation count averages.
const runAllocRuns = 60

// TestRunsWaitAllocs keeps a run's allocations from growing: GC is a large
// part of the service's CPU per run (issue 24).
func TestRunsWaitAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service for 70 runs")
	}
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "trellis.db")}, &blocked)
	for i := range 10 { // warm the pools, the statement cache and the queue
		waitOnce(t, r.url, fmt.Sprintf("w-%d", i))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range runAllocRuns {
		waitOnce(t, r.url, fmt.Sprintf("a-%d", i))
	}
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / runAllocRuns
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / runAllocRuns
	t.Logf("%.0f allocations, %.0f bytes per runs/wait", allocs, bytes)
	if allocs > maxRunAllocs {
		t.Errorf("a runs/wait took %.0f allocations, more than the %d bound", allocs, maxRunAllocs)
	}
	if bytes > maxRunBytes {
		t.Errorf("a runs/wait allocated %.0f bytes, more than the %d bound", bytes, maxRunBytes)
	}
}

// waitOnce makes one runs/wait of the echo graph on a new thread.
func waitOnce(t *testing.T, url, thread string) {
	t.Helper()
	body := `{"assistant_id":"echo","input":{"log":["hi"]},"if_not_exists":"create"}`
	resp, err := http.Post(url+"/threads/"+thread+"/runs/wait", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("echo hi")) {
		t.Fatalf("runs/wait: %d %s %v", resp.StatusCode, out, err)
	}
}
