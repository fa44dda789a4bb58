package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/sse"
)

var client = &http.Client{Timeout: 30 * time.Second}

// createRun starts a "work" run on a new thread through url. Steps are
// saved before the next starts (durability sync), so "a" counts as
// finished once its end is recorded.
func createRun(t *testing.T, url, thread string) string {
	t.Helper()
	body := `{"assistant_id":"work","input":{},"if_not_exists":"create","durability":"sync","stream_mode":["values","updates"]}`
	resp, err := client.Post(url+"/threads/"+thread+"/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var run struct {
		RunID string `json:"run_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("create a run on %s: %d %s", thread, resp.StatusCode, b)
	}
	return run.RunID
}

func runStatus(url, thread, run string) (string, error) {
	resp, err := client.Get(url + "/threads/" + thread + "/runs/" + run)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "", err
	}
	return r.Status, nil
}

// event is one streamed event as a client saw it.
type event struct{ id, name string }

// follow streams a run, starting through urls()[0]; when the connection
// breaks it reconnects through the next URL with its last event id, until
// "end". It returns every event seen (the metadata event of each
// connection excluded: it is not in the log) and the reconnections made.
func follow(ctx context.Context, urls func() []string, thread, run string) ([]event, int, error) {
	var got []event
	last := "-1"
	reconnects := 0
	for attempt := 0; attempt < 20; attempt++ {
		us := urls()
		url := us[attempt%len(us)]
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/threads/"+thread+"/runs/"+run+"/stream", nil)
		req.Header.Set("Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return got, reconnects, ctx.Err()
			}
			reconnects++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		rd := sse.NewReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			switch ev.Event {
			case "end":
				resp.Body.Close()
				return got, reconnects, nil
			case "metadata":
				if ev.ID == "" {
					continue
				}
			}
			if ev.ID != "" {
				last = ev.ID
			}
			got = append(got, event{ev.ID, ev.Event})
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			return got, reconnects, ctx.Err()
		}
		reconnects++
	}
	return got, reconnects, fmt.Errorf("run %s: gave up reconnecting", run)
}

// replay reads a finished run's whole log through url.
func replay(t *testing.T, url, thread, run string) []event {
	t.Helper()
	evs, _, err := follow(context.Background(), func() []string { return []string{url} }, thread, run)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// waitStarted waits until node b has started on every thread.
func (c *cluster) waitStarted(threads []string, within time.Duration) {
	c.t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		starts, _ := c.execCounts("b")
		n := 0
		for _, th := range threads {
			if starts["default/"+th] > 0 {
				n++
			}
		}
		if n == len(threads) {
			return
		}
		if time.Now().After(end) {
			c.t.Fatalf("node b started on %d of %d threads within %v", n, len(threads), within)
		}
	}
}

// waitDone waits until every run is terminal (through url) and returns
// the statuses.
func waitDone(t *testing.T, url func() string, threads, runIDs []string, within time.Duration) map[string]int {
	t.Helper()
	statuses := map[string]int{}
	for i, th := range threads {
		for end := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			st, err := runStatus(url(), th, runIDs[i])
			if err == nil && st != "pending" && st != "running" {
				statuses[st]++
				break
			}
			if time.Now().After(end) {
				t.Fatalf("run %s on %s still %q (%v) after %v", runIDs[i], th, st, err, within)
			}
		}
	}
	return statuses
}

// The main scenario: 200 runs on 3 replicas, one replica SIGKILLed while
// every run waits in its second node, restarted; clients streaming through
// it reconnect elsewhere.
func TestKillAReplicaMidRun(t *testing.T) {
	c := newCluster(t)
	names := []string{"r1", "r2", "r3"}
	for _, n := range names {
		c.start(n)
	}
	const runs, streamed = 200, 30
	threads := make([]string, runs)
	ids := make([]string, runs)
	for i := range runs {
		threads[i] = fmt.Sprintf("kill-%03d", i)
		ids[i] = createRun(t, c.url(names[i%3]), threads[i])
	}
	// Clients streaming through r1, the replica to be killed; on a broken
	// connection they go on through r2, then r3.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type result struct {
		evs        []event
		reconnects int
		err        error
	}
	results := make([]result, streamed)
	var wg sync.WaitGroup
	r1 := c.url("r1")
	for i := range streamed {
		wg.Go(func() {
			first := true
			urls := func() []string {
				if first {
					first = false
					return []string{r1}
				}
				return []string{c.url("r2"), c.url("r3")}
			}
			evs, rc, err := follow(ctx, urls, threads[i], ids[i])
			results[i] = result{evs, rc, err}
		})
	}
	c.waitStarted(threads, 90*time.Second)
	kill := time.Now()
	c.signal("r1", syscall.SIGKILL)
	c.start("r1")
	c.release()
	statuses := waitDone(t, func() string { return c.url("r2") }, threads, ids, 2*time.Minute)
	done := time.Since(kill)
	wg.Wait()

	if statuses["success"] != runs {
		t.Errorf("statuses %v, want %d success", statuses, runs)
	}
	aStarts, aEnded := c.execCounts("a")
	bStarts, _ := c.execCounts("b")
	twiceB := 0
	for _, th := range threads {
		key := "default/" + th
		if aEnded(key, kill) && aStarts[key] != 1 {
			t.Errorf("%s: node a finished before the kill and ran %d times", th, aStarts[key])
		}
		if n := bStarts[key]; n < 1 || n > 2 {
			t.Errorf("%s: node b (running at the kill) ran %d times, want 1 or 2", th, n)
		} else if n == 2 {
			twiceB++
		}
	}
	events, dups, reconnected := 0, 0, 0
	for i, r := range results {
		if r.err != nil {
			t.Errorf("stream of %s: %v", threads[i], r.err)
			continue
		}
		if r.reconnects > 0 {
			reconnected++
		}
		full := replay(t, c.url("r3"), threads[i], ids[i])
		seen := map[string]int{}
		for _, ev := range r.evs {
			seen[ev.id]++
			if seen[ev.id] == 2 {
				dups++
			}
		}
		if fmt.Sprint(r.evs) != fmt.Sprint(full) {
			t.Errorf("stream of %s saw %d events %v, the log has %d %v", threads[i], len(r.evs), r.evs, len(full), full)
		}
		events += len(r.evs)
	}
	if reconnected == 0 {
		t.Error("no streaming client had to reconnect: the kill did not cut any stream")
	}
	t.Logf("FIGURES kill: runs=%d kills=1 success=%d node-b-twice=%d all-finished-after-kill=%v streams=%d reconnected=%d events-checked=%d duplicates=%d",
		runs, statuses["success"], twiceB, done.Round(time.Millisecond), streamed, reconnected, events, dups)
	if os.Getenv("TRELLIS_FAULT_KEEP_LOGS") != "" {
		t.Logf("replica logs in %s", filepath.Join(c.dir))
	}
}

// wave starts n runs through the replicas named, streams the first
// streamed of them through via (reconnecting through the others), waits
// until every run waits in node b, calls disrupt, releases the barrier and
// waits for every run to end. It checks the statuses and the streams and
// returns the threads.
func (c *cluster) wave(prefix string, n, streamed int, names []string, via string, disrupt func()) []string {
	t := c.t
	t.Helper()
	_ = os.Remove(filepath.Join(c.dir, "barrier"))
	threads := make([]string, n)
	ids := make([]string, n)
	for i := range n {
		threads[i] = fmt.Sprintf("%s-%03d", prefix, i)
		ids[i] = createRun(t, c.url(names[i%len(names)]), threads[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	got := make([][]event, streamed)
	errs := make([]error, streamed)
	var wg sync.WaitGroup
	for i := range streamed {
		wg.Go(func() {
			urls := func() []string {
				us := []string{}
				if u := c.url(via); u != "" {
					us = append(us, u)
				}
				for _, n := range names {
					if u := c.url(n); u != "" && n != via {
						us = append(us, u)
					}
				}
				return us
			}
			got[i], _, errs[i] = follow(ctx, urls, threads[i], ids[i])
		})
	}
	c.waitStarted(threads, 90*time.Second)
	disrupt()
	c.release()
	alive := func() string {
		for _, n := range names {
			if u := c.url(n); u != "" {
				return u
			}
		}
		return ""
	}
	statuses := waitDone(t, alive, threads, ids, 2*time.Minute)
	wg.Wait()
	if statuses["success"] != n {
		t.Errorf("%s: statuses %v, want %d success", prefix, statuses, n)
	}
	for i := range streamed {
		if errs[i] != nil {
			t.Errorf("%s: stream of %s: %v", prefix, threads[i], errs[i])
			continue
		}
		full := replay(t, alive(), threads[i], ids[i])
		if fmt.Sprint(got[i]) != fmt.Sprint(full) {
			t.Errorf("%s: stream of %s saw %v, the log has %v", prefix, threads[i], got[i], full)
		}
	}
	return threads
}

// Redis restarted mid-run, a replica stopped with SIGTERM mid-run, and a
// run cancelled through a replica that does not execute it.
func TestRedisRestartSIGTERMAndCancel(t *testing.T) {
	c := newCluster(t)
	names := []string{"r1", "r2", "r3"}
	for _, n := range names {
		c.start(n)
	}

	// Redis restarts: runs go on, streams fall back to the durable log.
	threads := c.wave("redis", 40, 10, names, "r2", func() {
		c.stopRedis()
		time.Sleep(300 * time.Millisecond)
		c.startRedis()
	})
	aStarts, _ := c.execCounts("a")
	bStarts, _ := c.execCounts("b")
	for _, th := range threads {
		if aStarts["default/"+th] != 1 || bStarts["default/"+th] != 1 {
			t.Errorf("%s: nodes ran a=%d b=%d times across a Redis restart, want once each", th, aStarts["default/"+th], bStarts["default/"+th])
		}
	}

	// SIGTERM: r3 stops within its grace period; its runs, stuck at the
	// barrier, are left running and taken over by r1 and r2.
	var stopped time.Duration
	threads = c.wave("term", 30, 10, names, "r3", func() {
		t0 := time.Now()
		c.signal("r3", syscall.SIGTERM)
		stopped = time.Since(t0)
	})
	aStarts, aEnded := c.execCounts("a")
	bStarts, _ = c.execCounts("b")
	for _, th := range threads {
		key := "default/" + th
		if aEnded(key, time.Now()) && aStarts[key] != 1 {
			t.Errorf("%s: node a ran %d times across a SIGTERM", th, aStarts[key])
		}
		if n := bStarts[key]; n < 1 || n > 2 {
			t.Errorf("%s: node b ran %d times across a SIGTERM", th, n)
		}
	}
	t.Logf("FIGURES sigterm: runs=30 success (checked) replica-stop=%v", stopped.Round(time.Millisecond))
	c.start("r3")

	// Cancel through a replica that does not execute the run.
	_ = os.Remove(filepath.Join(c.dir, "barrier"))
	thread := "cancel-000"
	run := createRun(t, c.url("r1"), thread)
	c.waitStarted([]string{thread}, 30*time.Second)
	var executor string
	if err := c.conn.QueryRow(context.Background(), `SELECT replica FROM `+c.schema+`.fault_exec WHERE thread_id = $1 AND node = 'b' LIMIT 1`, "default/"+thread).Scan(&executor); err != nil {
		t.Fatal(err)
	}
	other := "r1"
	if executor == "r1" {
		other = "r2"
	}
	t0 := time.Now()
	resp, err := client.Post(c.url(other)+"/threads/"+thread+"/runs/"+run+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	acked := time.Now()
	if resp.StatusCode >= 300 {
		t.Fatalf("cancel through %s: %d", other, resp.StatusCode)
	}
	var ended time.Duration
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		st, err := runStatus(c.url(other), thread, run)
		if err == nil && st == "interrupted" {
			ended = time.Since(t0)
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the cancelled run is still %q", st)
		}
	}
	c.release() // nothing may start now
	time.Sleep(500 * time.Millisecond)
	var after int
	if err := c.conn.QueryRow(context.Background(), `SELECT count(*) FROM `+c.schema+`.fault_exec WHERE thread_id = $1 AND phase = 'start' AND at > $2`, "default/"+thread, acked).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != 0 {
		t.Errorf("%d nodes started after the cancel was acknowledged", after)
	}
	t.Logf("FIGURES cancel: executed-on=%s cancelled-through=%s ack=%v run-interrupted-after=%v", executor, other, acked.Sub(t0).Round(time.Microsecond), ended.Round(time.Microsecond))
}
