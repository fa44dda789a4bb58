package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Double-texting under real concurrency, on SQLite and PostgreSQL: while a
// run is active, many clients post rollback (or interrupt) runs on the
// thread at once. Every request gets its run (200) — never a 404 for the
// thread that exists, never a 500 — and the newest run wins: it ends in
// success and its message is the last in the state.
func TestConcurrentDoubleTextingOverHTTP(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "t.db") },
		"postgres": func(t *testing.T) string { url, _, _ := pgSchema(t, "dbltext"); return url },
	}
	for name, database := range backends {
		for _, strategy := range []string{"rollback", "interrupt"} {
			t.Run(name+"/"+strategy, func(t *testing.T) {
				var blocked atomic.Int32
				r := start(t, Config{Database: database(t), DataDir: t.TempDir()}, &blocked)
				doubleText(t, r, &blocked, strategy)
			})
		}
	}
}

func doubleText(t *testing.T, r *running, blocked *atomic.Int32, strategy string) {
	const thread, clients = "6a3e2c1d-7b9f-4e8a-9c0d-1f2e3d4c5b6a", 100
	if code, body, _ := post(t, r.url+"/threads", `{"thread_id":"`+thread+`"}`); code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	if code, body, _ := post(t, r.url+"/threads/"+thread+"/runs", `{"assistant_id":"echo","input":{"log":["block"]}}`); code != 200 {
		t.Fatalf("first run: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for blocked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first run did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	type answer struct {
		code int
		body string
	}
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, body, _ := post(t, r.url+"/threads/"+thread+"/runs",
				fmt.Sprintf(`{"assistant_id":"echo","input":{"log":["m%d"]},"multitask_strategy":%q}`, i, strategy))
			answers[i] = answer{code, body}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d answers in %v", clients, time.Since(began))
	created := map[string]int{} // run ID → client
	for i, a := range answers {
		if a.code != 200 {
			t.Errorf("client %d: %d %s; want 200 with its run", i, a.code, a.body)
			continue
		}
		var run struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(a.body), &run); err != nil || run.RunID == "" {
			t.Fatalf("client %d: %s (%v)", i, a.body, err)
		}
		created[run.RunID] = i
	}
	if t.Failed() {
		return
	}

	// Wait for the thread to settle: no pending or running run left.
	deadline = time.Now().Add(60 * time.Second)
	for {
		code, body, _ := get(t, r.url+"/threads/"+thread+"/runs?status=pending")
		code2, body2, _ := get(t, r.url+"/threads/"+thread+"/runs?status=running")
		if code != 200 || code2 != 200 {
			t.Fatalf("list runs: %d %s / %d %s", code, body, code2, body2)
		}
		if body == "[]" && body2 == "[]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread did not settle: pending %s running %s", body, body2)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("settled after %v", time.Since(began))
	code, body, _ := get(t, r.url+"/threads/"+thread+"/runs?limit=1000")
	var left []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &left); code != 200 || err != nil || len(left) == 0 {
		t.Fatalf("list runs: %d %s (%v)", code, body, err)
	}
	newest := left[0] // newest first
	i, ok := created[newest.RunID]
	if !ok || newest.Status != "success" {
		t.Fatalf("the newest run %s (client %d, known %v) ended %s; want the last double-text to succeed", newest.RunID, i, ok, newest.Status)
	}
	code, body, _ = get(t, r.url+"/threads/"+thread+"/state")
	var state struct {
		Values struct {
			Log []string `json:"log"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(body), &state); code != 200 || err != nil {
		t.Fatalf("state: %d %s (%v)", code, body, err)
	}
	l := state.Values.Log
	if want := fmt.Sprintf("echo m%d", i); len(l) == 0 || l[len(l)-1] != want {
		t.Errorf("state log %v: want it to end with the newest run's %q", l, want)
	}
	if strategy == "rollback" {
		if strings.Contains(body, `"block"`) {
			t.Errorf("the rolled-back first run's input is still in the state: %v", l)
		}
		for _, run := range left {
			if run.Status != "success" {
				t.Errorf("run %s is %s: a rolled-back run is removed", run.RunID, run.Status)
			}
		}
	}
	if code, body, _ := get(t, r.url+"/threads/"+thread); code != http.StatusOK {
		t.Errorf("the thread: %d %s", code, body)
	}
}
