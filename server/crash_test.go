package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
)

// The crash test kills a serving process (this test binary, re-run as a
// server) with SIGKILL while its runs' nodes wait on a barrier the test
// controls, starts another on the same database, and checks that every run
// ends once with success, that nodes finished before the kill ran once and
// nodes running at it at most twice, and that a run's stream replays every
// event once. A node counts as finished when its step is saved: before the
// next step starts under durability "sync", while it runs under the
// default "async" (the test waits for the save before the kill).

const (
	envCrashChild = "TRELLIS_SERVE_CRASH_CHILD"
	envCrashDir   = "TRELLIS_SERVE_CRASH_DIR"
	crashRuns     = 4
)

var crashLog = graph.NewKey("log", graph.Concat[string]())

// crashGraph: first (records its run) → wait (records its start, waits for
// the barrier file, records its end) → END.
func crashGraph(dir string) runs.GraphSpec {
	record := func(what string) error {
		f, err := os.OpenFile(filepath.Join(dir, "side.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if g, err := os.OpenFile(filepath.Join(dir, "pids.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(g, os.Getpid(), time.Now().Format("15:04:05.000"), what)
			g.Close()
		}
		if _, err := fmt.Fprintln(f, what); err != nil {
			return err
		}
		return f.Sync()
	}
	return runs.GraphSpec{New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(crashLog)
		b.AddNode("first", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			if err := record("first " + graph.ThreadID(ctx)); err != nil {
				return nil, err
			}
			return graph.Writes(graph.Append(crashLog, "first")), nil
		})
		b.AddNode("wait", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			if err := record("wait " + graph.ThreadID(ctx)); err != nil {
				return nil, err
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "barrier")); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			return graph.Writes(graph.Append(crashLog, "done")), nil
		})
		b.SetEntry("first")
		b.AddEdge("first", "wait")
		b.AddEdge("wait", graph.END)
		return b.Compile()
	}}
}

// crashChild serves until it is killed, printing its URL.
func crashChild() int {
	dir := os.Getenv(envCrashDir)
	// The lease is short so the restarted process takes the runs over
	// soon, but not so short that a renewal starved on a loaded machine
	// (it renews every TTL/3) loses it while "first" runs: the takeover
	// would then legitimately run "first" again, before the kill.
	s, err := New(context.Background(), Config{
		Addr: "127.0.0.1:0", Database: filepath.Join(dir, "trellis.db"), DataDir: dir,
		LeaseTTL: 3 * time.Second, SweepInterval: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	if err := s.Register("crash", crashGraph(dir)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	go func() {
		<-s.Ready()
		fmt.Printf("URL http://%s\n", s.Addr())
	}()
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 4
	}
	return 0
}

// startChild runs a serving child and returns its URL.
func startChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	return startChildEnv(t, envCrashChild+"=1", envCrashDir+"="+dir)
}

// startChildEnv runs this test binary with env added, as a serving child
// that prints its URL, and returns it; the child is killed at cleanup.
func startChildEnv(t *testing.T, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatal("the serving child did not start")
	}
	return nil, ""
}

func countSide(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "side.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			n[l]++
		}
	}
	return n
}

func TestServeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	// No keep-alive: no connection outlives the test (goleak).
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	first, url := startChild(t, dir)
	resp, err := client.Post(url+"/assistants", "application/json", strings.NewReader(`{"assistant_id":"5b1c2d3e-0000-4000-8000-000000000001","graph_id":"crash"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runIDs := map[string]string{}
	durable := map[string]bool{}
	for i := range crashRuns {
		thread := fmt.Sprintf("6f1c7a52-3d8e-4f7e-9a51-0c2d4b1e8a%02d", i)
		// Half the runs save each step before the next starts (sync); the
		// others use the default, async, which saves a step while the next
		// one runs.
		durability := "async"
		if i%2 == 0 {
			durability = "sync"
		}
		durable[thread] = durability == "sync"
		body := `{"assistant_id":"crash","input":{"log":["in"]},"if_not_exists":"create","stream_mode":["values","updates"],"durability":"` + durability + `"}`
		resp, err := client.Post(url+"/threads/"+thread+"/runs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var run struct {
			RunID string `json:"run_id"`
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || json.Unmarshal(b, &run) != nil {
			t.Fatalf("create run: %d %s", resp.StatusCode, b)
		}
		runIDs[thread] = run.RunID
	}
	// Kill once every run's second node is waiting at the barrier.
	deadline := time.Now().Add(60 * time.Second)
	for {
		waiting := 0
		for thread := range runIDs {
			// An async run's "first" counts as finished once its step's
			// checkpoint is saved: the thread's state then waits on "wait".
			if countSide(t, dir)["wait default/"+thread] > 0 && (durable[thread] || nextIs(t, client, url, thread, "wait")) {
				waiting++
			}
		}
		if waiting == crashRuns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes did not reach the barrier: %v", countSide(t, dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if err := os.WriteFile(filepath.Join(dir, "barrier"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, url = startChild(t, dir)
	for thread, runID := range runIDs {
		var status string
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			resp, err := client.Get(url + "/threads/" + thread + "/runs/" + runID)
			if err != nil {
				t.Fatal(err)
			}
			var run struct {
				Status string `json:"status"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&run)
			resp.Body.Close()
			if status = run.Status; status != "pending" && status != "running" {
				break
			}
		}
		if status != "success" {
			t.Errorf("run %s ended %q, want success", runID, status)
		}
		// The run's log replays every event once, in order.
		req, _ := http.NewRequest(http.MethodGet, url+"/threads/"+thread+"/runs/"+runID+"/stream", nil)
		req.Header.Set("Last-Event-ID", "-1")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rd := sse.NewReader(resp.Body)
		seen, last, values := map[string]bool{}, int64(0), ""
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			if ev.Event == "end" {
				break
			}
			if seen[ev.ID] {
				t.Errorf("run %s: event id %s twice", runID, ev.ID)
			}
			seen[ev.ID] = true
			var n int64
			if _, err := fmt.Sscan(ev.ID, &n); err == nil {
				if n <= last {
					t.Errorf("run %s: event id %d after %d", runID, n, last)
				}
				last = n
			}
			if ev.Event == "values" {
				values = string(ev.Data)
			}
		}
		resp.Body.Close()
		if !strings.Contains(values, `"first","done"`) {
			t.Errorf("run %s: last values %s", runID, values)
		}
	}
	side := countSide(t, dir)
	defer func() {
		if t.Failed() {
			pl, _ := os.ReadFile(filepath.Join(dir, "pids.log"))
			t.Logf("node runs by process and time:\n%s", pl)
		}
	}()
	t.Logf("node runs across both processes: %v", side)
	for thread := range runIDs {
		if n := side["first default/"+thread]; n != 1 {
			t.Errorf("first ran %d times on %s, want once (it finished before the kill)", n, thread)
		}
		if n := side["wait default/"+thread]; n < 1 || n > 2 {
			t.Errorf("wait ran %d times on %s, want once or twice (it was running at the kill)", n, thread)
		}
	}
}

// nextIs reports whether the thread's saved state has exactly node next to
// run.
func nextIs(t *testing.T, client *http.Client, url, thread, node string) bool {
	t.Helper()
	resp, err := client.Get(url + "/threads/" + thread + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Next []string `json:"next"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false
	}
	return len(st.Next) == 1 && st.Next[0] == node
}
