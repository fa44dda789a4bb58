package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/runs"
)

// rootIDs lists a thread's root checkpoint IDs, newest first.
func rootIDs(t *testing.T, s *Server, thread string) []string {
	t.Helper()
	var ids []string
	for tup, err := range s.st.saver.List(context.Background(), checkpoint.Ref{ThreadID: runs.ThreadKey(api.DefaultTenant, thread)}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tup.Ref.ID)
	}
	return ids
}

// history returns a thread's states from POST /threads/{id}/history by
// checkpoint ID, each as its raw JSON.
func history(t *testing.T, url, thread string) map[string]string {
	t.Helper()
	code, out, _ := post(t, url+"/threads/"+thread+"/history", `{"limit":1000}`)
	if code != 200 {
		t.Fatalf("history: %d %s", code, out)
	}
	var states []json.RawMessage
	if err := json.Unmarshal([]byte(out), &states); err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{}
	for _, st := range states {
		var head struct {
			Checkpoint struct {
				ID string `json:"checkpoint_id"`
			} `json:"checkpoint"`
		}
		if err := json.Unmarshal(st, &head); err != nil {
			t.Fatal(err)
		}
		byID[head.Checkpoint.ID] = string(st)
	}
	return byID
}

// A thread with 30 turns and a fork, swept with keep_last 5: it keeps the
// main line's newest 5 checkpoints, the head of the branch the fork
// superseded, and a checkpoint its metadata names; the API still reads its
// state and history as before, byte for byte, and runs on from the kept
// fork head.
func TestRetentionSweep(t *testing.T) {
	retentionSweep(t, filepath.Join(t.TempDir(), "t.db"))
}

// TestRetentionSweep on PostgreSQL (TRELLIS_TEST_PG_DSN).
func TestRetentionSweepPostgres(t *testing.T) {
	url, _, _ := pgSchema(t, "retain")
	retentionSweep(t, url)
}

func retentionSweep(t *testing.T, database string) {
	const keep = 5
	r := start(t, Config{Database: database, DataDir: t.TempDir(), ShutdownGrace: 100 * time.Millisecond,
		ThreadSweepInterval: time.Hour,
		AssistantRetention:  map[string]checkpoint.Retention{DefaultAssistantID("echo"): {KeepLast: keep, ForksOlderThan: 720 * time.Hour}}}, nil)
	ctx := context.Background()
	if code, out, _ := post(t, r.url+"/threads", `{"thread_id":"long"}`); code != 200 {
		t.Fatalf("create: %d %s", code, out)
	}
	if code, out, _ := post(t, r.url+"/threads", `{"thread_id":"other"}`); code != 200 {
		t.Fatalf("create: %d %s", code, out)
	}
	turn := func(thread, body string) {
		t.Helper()
		if code, out, _ := post(t, r.url+"/threads/"+thread+"/runs/wait", body); code != 200 {
			t.Fatalf("run on %s: %d %s", thread, code, out)
		}
	}
	var afterTen string
	for i := range 30 {
		turn("long", `{"assistant_id":"echo","input":{"log":["turn `+string(rune('a'+i%26))+`"]}}`)
		if i == 9 {
			afterTen = rootIDs(t, r.s, "long")[0]
		}
	}
	// No policy applies to threads of assistants without one.
	code, out, _ := post(t, r.url+"/assistants", `{"graph_id":"echo","name":"no policy"}`)
	var plain struct {
		ID string `json:"assistant_id"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &plain) != nil || plain.ID == "" {
		t.Fatalf("create an assistant: %d %s", code, out)
	}
	for range 3 {
		turn("other", `{"assistant_id":"`+plain.ID+`","input":{"log":["x"]}}`)
	}
	beforeFork := rootIDs(t, r.s, "long")
	oldHead := beforeFork[0]
	// Fork at turn 10 and go on from the fork: the turns after 10 become
	// a superseded branch whose head is oldHead.
	code, out, _ = post(t, r.url+"/threads/long/state", `{"checkpoint_id":"`+afterTen+`","values":{"log":["forked"]}}`)
	if code != 200 {
		t.Fatalf("fork: %d %s", code, out)
	}
	turn("long", `{"assistant_id":"echo","input":{"log":["after the fork"]}}`)
	// The thread's metadata names an early checkpoint (an experiment's,
	// say): it stays.
	pinned := beforeFork[len(beforeFork)-3]
	if code := patch(t, r.url+"/threads/long", `{"metadata":{"pinned":"`+pinned+`"}}`); code != 200 {
		t.Fatalf("patch metadata: %d", code)
	}

	all := rootIDs(t, r.s, "long")
	otherBefore := len(rootIDs(t, r.s, "other"))
	_, stateBefore, _ := get(t, r.url+"/threads/long/state")
	histBefore := history(t, r.url, "long")
	_, forkStateBefore, _ := get(t, r.url+"/threads/long/state/"+oldHead)
	// The main line: from the latest back through parents.
	parent := map[string]string{}
	for tup, err := range r.s.st.saver.List(ctx, checkpoint.Ref{ThreadID: runs.ThreadKey(api.DefaultTenant, "long")}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		parent[tup.Ref.ID] = tup.Metadata.Parent
	}
	var main []string
	for id := all[0]; id != ""; id = parent[id] {
		main = append(main, id)
	}
	if len(main) <= keep+3 || len(all) < 60 {
		t.Fatalf("the thread has %d checkpoints, %d on the main line; want a long thread", len(all), len(main))
	}

	st, err := r.s.sweepRetention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(main[:keep]), oldHead, pinned)
	slices.Sort(want)
	got := rootIDs(t, r.s, "long")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("after the sweep the thread keeps %d checkpoints %v; want the main line's newest %d, the fork head and the pinned one: %v", len(got), got, keep, want)
	}
	if st.Removed != len(all)-len(want) || !st.Wrapped {
		t.Errorf("sweep = %+v; want %d removed and the cursor back at the start", st, len(all)-len(want))
	}
	if n := len(rootIDs(t, r.s, "other")); n != otherBefore {
		t.Errorf("a thread without a policy went from %d to %d checkpoints", otherBefore, n)
	}

	// The API reads the same state and, for what is kept, the same history.
	if _, s, _ := get(t, r.url+"/threads/long/state"); s != stateBefore {
		t.Errorf("state after the sweep:\n%s\nwant\n%s", s, stateBefore)
	}
	histAfter := history(t, r.url, "long")
	if len(histAfter) != len(want) {
		t.Errorf("history has %d states after the sweep; want %d", len(histAfter), len(want))
	}
	for id, s := range histAfter {
		if s != histBefore[id] {
			t.Errorf("history state %s after the sweep:\n%s\nwant\n%s", id, s, histBefore[id])
		}
	}
	if _, s, _ := get(t, r.url+"/threads/long/state/"+oldHead); s != forkStateBefore {
		t.Errorf("the fork head's state after the sweep:\n%s\nwant\n%s", s, forkStateBefore)
	}
	// The page opens the fork head and runs on from it.
	code, out, _ = post(t, r.url+"/threads/long/runs/wait", `{"assistant_id":"echo","checkpoint_id":"`+oldHead+`","input":{"log":["on the old line"]}}`)
	if code != 200 || !strings.Contains(out, `"turn d","echo turn d","on the old line","echo on the old line"`) {
		t.Errorf("run from the kept fork head: %d %s", code, out)
	}
	// A second sweep finds nothing more to drop but the new turn's
	// superseded older main line.
	if st, err := r.s.sweepRetention(ctx); err != nil || st.Threads != 1 {
		t.Errorf("second sweep = %+v, %v", st, err)
	}
	if _, s, _ := get(t, r.url+"/threads/long/state/"+pinned); !strings.Contains(s, pinned) {
		t.Errorf("the pinned checkpoint after two sweeps: %s", s)
	}
}

// A sweep visits ThreadSweepBatch threads and goes on from there at the
// next tick; a checkpoint a running run forked from stays although the
// policy (keep_last 1) would drop it.
func TestRetentionSweepBatchesAndLiveRuns(t *testing.T) {
	var blocked atomic.Int32
	r := start(t, Config{Database: filepath.Join(t.TempDir(), "t.db"), ShutdownGrace: 100 * time.Millisecond,
		ThreadSweepInterval: time.Hour, ThreadSweepBatch: 1, Retention: checkpoint.Retention{KeepLast: 1}}, &blocked)
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if code, out, _ := post(t, r.url+"/threads", `{"thread_id":"`+id+`"}`); code != 200 {
			t.Fatalf("create: %d %s", code, out)
		}
		for range 4 {
			if code, out, _ := post(t, r.url+"/threads/"+id+"/runs/wait", `{"assistant_id":"echo","input":{"log":["x"]}}`); code != 200 {
				t.Fatalf("run: %d %s", code, out)
			}
		}
	}
	b := rootIDs(t, r.s, "b")
	from := b[len(b)/2]
	if code, out, _ := post(t, r.url+"/threads/b/runs", `{"assistant_id":"echo","checkpoint_id":"`+from+`","input":{"log":["block"]}}`); code != 200 {
		t.Fatalf("background run: %d %s", code, out)
	}
	for deadline := time.Now().Add(30 * time.Second); blocked.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background run never started")
		}
	}
	for i, want := range []RetentionStats{{Threads: 1}, {Threads: 1}, {Wrapped: true}} {
		st, err := r.s.sweepRetention(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Threads != want.Threads || st.Wrapped != want.Wrapped || (st.Threads > 0) != (st.Removed > 0) {
			t.Errorf("sweep %d = %+v; want %d threads, wrapped %v", i, st, want.Threads, want.Wrapped)
		}
	}
	if n := len(rootIDs(t, r.s, "a")); n != 1 {
		t.Errorf("thread a keeps %d checkpoints; want 1", n)
	}
	after := rootIDs(t, r.s, "b")
	if !slices.Contains(after, from) || !slices.Contains(after, b[0]) {
		t.Errorf("thread b keeps %v; want the running run's starting checkpoint %s and the old head %s among them", after, from, b[0])
	}
	if code, s, _ := get(t, r.url+"/threads/b/state/"+from); code != 200 {
		t.Errorf("the running run's starting checkpoint: %d %s", code, s)
	}
}
