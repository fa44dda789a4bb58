package server

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// checkpoints counts a thread's root checkpoints.
func checkpoints(t *testing.T, s *Server, thread string) int {
	t.Helper()
	n := 0
	for _, err := range s.st.saver.List(context.Background(), checkpoint.Ref{ThreadID: runs.ThreadKey(api.DefaultTenant, thread)}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// patch sends a PATCH with a JSON body and returns the status.
func patch(t *testing.T, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

// Threads get the configured default TTL or their own (POST and PATCH,
// the SDK's shapes); a sweep after they expire deletes a delete thread
// with its runs and checkpoints, prunes a keep_latest thread to its latest
// checkpoint, and leaves alone a thread whose run is running and a thread
// without TTL.
func TestThreadTTLSweep(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), ShutdownGrace: 100 * time.Millisecond,
		ThreadTTL: &db.TTL{Duration: 2 * time.Hour, Strategy: db.TTLDelete}, ThreadSweepInterval: time.Hour}, &blocked)
	ctx := context.Background()
	mk := func(id, body string) {
		t.Helper()
		if code, out, _ := post(t, r.url+"/threads", body); code != 200 {
			t.Fatalf("create %s: %d %s", id, code, out)
		}
	}
	runWait := func(id, entry string) {
		t.Helper()
		if code, out, _ := post(t, r.url+"/threads/"+id+"/runs/wait", `{"assistant_id":"echo","input":{"log":["`+entry+`"]}}`); code != 200 {
			t.Fatalf("run on %s: %d %s", id, code, out)
		}
	}
	mk("del", `{"thread_id":"del"}`) // the default: 2 h, delete
	mk("keep", `{"thread_id":"keep","ttl":{"ttl":60,"strategy":"keep_latest"}}`)
	mk("busy", `{"thread_id":"busy","ttl":30}`)
	mk("forever", `{"thread_id":"forever"}`)
	if code := patch(t, r.url+"/threads/forever", `{"metadata":{"a":1}}`); code != 200 {
		t.Fatalf("patch: %d", code)
	}
	if code, _, _ := post(t, r.url+"/threads", `{"ttl":{"ttl":5,"strategy":"archive"}}`); code != 422 {
		t.Errorf("a bad strategy: %d; want 422", code)
	}
	for id, want := range map[string]db.TTL{"del": {Duration: 2 * time.Hour, Strategy: "delete"}, "keep": {Duration: time.Hour, Strategy: "keep_latest"}, "busy": {Duration: 30 * time.Minute, Strategy: "delete"}} {
		th, err := r.s.st.db.GetThread(ctx, api.DefaultTenant, id)
		if err != nil || th.TTL == nil || *th.TTL != want {
			t.Errorf("thread %s: TTL %+v (%v); want %+v", id, th.TTL, err, want)
		}
	}
	// A thread whose TTL is cleared never expires; PATCH replaces a TTL.
	if _, err := r.s.st.db.SetThreadTTL(ctx, api.DefaultTenant, "forever", nil); err != nil {
		t.Fatal(err)
	}
	if code := patch(t, r.url+"/threads/keep", `{"ttl":{"ttl":90,"strategy":"keep_latest"}}`); code != 200 {
		t.Errorf("patch ttl: %d", code)
	}
	if th, _ := r.s.st.db.GetThread(ctx, api.DefaultTenant, "keep"); th.TTL == nil || th.TTL.Duration != 90*time.Minute {
		t.Errorf("after PATCH: TTL %+v", th.TTL)
	}

	runWait("del", "a")
	runWait("keep", "a")
	runWait("keep", "b")
	if n := checkpoints(t, r.s, "keep"); n < 3 {
		t.Fatalf("keep has %d checkpoints before the sweep; want several", n)
	}
	// busy's run blocks: it stays running through the sweep.
	if code, out, _ := post(t, r.url+"/threads/busy/runs", `{"assistant_id":"echo","input":{"log":["block"]}}`); code != 200 {
		t.Fatalf("background run: %d %s", code, out)
	}
	for deadline := time.Now().Add(30 * time.Second); blocked.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background run never started")
		}
	}

	n, err := r.s.sweepThreads(ctx, time.Now().Add(3*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("sweep: %d threads, %v; want 2", n, err)
	}
	if code, _, _ := get(t, r.url+"/threads/del"); code != 404 {
		t.Errorf("del after the sweep: %d; want 404", code)
	}
	if got := checkpoints(t, r.s, "del"); got != 0 {
		t.Errorf("del keeps %d checkpoints", got)
	}
	if code, body, _ := get(t, r.url+"/threads/keep/state"); code != 200 || !strings.Contains(body, `"echo b"`) {
		t.Errorf("keep after the sweep: %d %s; want its latest state", code, body)
	}
	if got := checkpoints(t, r.s, "keep"); got != 1 {
		t.Errorf("keep has %d checkpoints after the sweep; want 1", got)
	}
	for _, id := range []string{"busy", "forever"} {
		if code, _, _ := get(t, r.url+"/threads/"+id); code != 200 {
			t.Errorf("%s after the sweep: %d; want it kept", id, code)
		}
	}
	// A pruned keep_latest thread is not swept again until new activity.
	if n, err := r.s.sweepThreads(ctx, time.Now().Add(3*time.Hour)); err != nil || n != 0 {
		t.Errorf("second sweep: %d, %v; want nothing", n, err)
	}
}

// Bad TTL settings are refused at New.
func TestBadThreadTTL(t *testing.T) {
	for _, ttl := range []*db.TTL{{Duration: 0, Strategy: "delete"}, {Duration: time.Hour, Strategy: "archive"}} {
		s, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), ThreadTTL: ttl})
		if err == nil {
			s.Close()
			t.Errorf("%+v accepted", ttl)
		}
	}
}
