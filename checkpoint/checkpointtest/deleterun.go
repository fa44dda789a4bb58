package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
)

// deleteRun calls DeleteRun and checks how many checkpoints it removed.
func deleteRun(t *testing.T, s checkpoint.Saver, thread, run string, want int) {
	t.Helper()
	n, err := s.DeleteRun(context.Background(), thread, run)
	if err != nil {
		t.Fatalf("DeleteRun(%q, %q): %v", thread, run, err)
	}
	if n != want {
		t.Errorf("DeleteRun(%q, %q) removed %d checkpoints, want %d", thread, run, n, want)
	}
}

// snapshot returns every tuple of ref's namespace, newest first.
func snapshot(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref) []*checkpoint.Tuple {
	t.Helper()
	tuples, err := collect(s.List(context.Background(), at(ref, ""), checkpoint.ListOptions{}))
	if err != nil {
		t.Fatalf("List(%s): %v", ref, err)
	}
	return tuples
}

// checkSame compares whole tuples, writes included.
func checkSame(t *testing.T, what string, want, got []*checkpoint.Tuple) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

func putWrite(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, task, value string) {
	t.Helper()
	err := s.PutWrites(context.Background(), ref, task, []checkpoint.PendingWrite{{Index: 0, Key: "msgs", Value: json.RawMessage(value)}})
	if err != nil {
		t.Fatalf("PutWrites(%s, %q): %v", ref, task, err)
	}
}

// testDeleteRun writes two runs into a thread, each also in a subgraph
// namespace, deletes the second, and checks that the first run's history is
// exactly as before and that the thread can be written from there again.
func testDeleteRun(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	root := newThread(t, s, "main")
	child := root.namespace("agent:1")
	root.run, child.run = "run-1", "run-1"
	a1 := root.put(full("msgs", 1, `["hi"]`), full("title", 1, `"T"`))
	a2 := root.put(delta("msgs", 2, 1, `["there"]`))
	putWrite(t, s, a2.ref, "task-a", `["run 1 wrote this"]`)
	c1 := child.put(full("inner", 1, `"x"`))

	// Run 2 resumes from a2: its first task's writes go to a2, which
	// belongs to run 1 and keeps them.
	root.run, child.run = "run-2", "run-2"
	putWrite(t, s, a2.ref, "task-resume", `["run 2 wrote this on run 1's checkpoint"]`)
	b1 := root.put(delta("msgs", 3, 2, `["again"]`))
	putWrite(t, s, b1.ref, "task-b", `["run 2"]`)
	root.put(full("title", 2, `"T2"`), delta("msgs", 4, 3, `["more"]`))
	child.put(delta("inner", 2, 1, `"y"`))
	only2 := root.namespace("agent:2")
	only2.put(full("other", 1, `1`))

	before := map[string][]*checkpoint.Tuple{}
	for _, th := range []*thread{root, child} {
		all := snapshot(t, s, th.ref)
		var run1 []*checkpoint.Tuple
		for _, tup := range all {
			if tup.Metadata.RunID == "run-1" {
				run1 = append(run1, tup)
			}
		}
		before[th.ref.Namespace] = run1
	}

	deleteRun(t, s, root.ref.ThreadID, "run-2", 4)

	checkSame(t, "root namespace after DeleteRun", before[""], snapshot(t, s, root.ref))
	checkSame(t, "subgraph namespace after DeleteRun", before["agent:1"], snapshot(t, s, child.ref))
	checkIDs(t, "root namespace after DeleteRun", idsOf(a2, a1), listIDs(t, s, root.ref, checkpoint.ListOptions{}))
	checkIDs(t, "subgraph namespace after DeleteRun", idsOf(c1), listIDs(t, s, child.ref, checkpoint.ListOptions{}))
	checkIDs(t, "run-2 checkpoints after DeleteRun", nil, listIDs(t, s, root.ref, checkpoint.ListOptions{Filter: map[string]string{"run_id": "run-2"}}))
	latest := get(t, s, root.ref)
	if latest.Ref.ID != a2.ref.ID {
		t.Fatalf("latest after DeleteRun = %s, want run 1's last checkpoint %s", latest.Ref.ID, a2.ref.ID)
	}
	checkSame(t, "latest after DeleteRun", before[""][:1], []*checkpoint.Tuple{latest})
	checkNotFound(t, s, only2.ref)
	checkNotFound(t, s, checkpoint.Ref{ThreadID: root.ref.ThreadID, ID: b1.ref.ID})
	if err := s.PutWrites(ctx, b1.ref, "task-b", nil); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on a deleted checkpoint: error = %v, want ErrNotFound", err)
	}

	// Run 3 continues from the new heads, reusing the deleted versions
	// with other content, in every namespace.
	root.run, child.run, only2.run = "run-3", "run-3", "run-3"
	root.latest, root.versions = a2.ref.ID, a2.cp.Versions
	child.latest, child.versions = c1.ref.ID, c1.cp.Versions
	only2.latest, only2.versions = "", map[string]uint64{}
	r3 := root.put(delta("msgs", 3, 2, `["a different third"]`), full("title", 2, `"T3"`))
	c3 := child.put(delta("inner", 2, 1, `"z"`))
	o3 := only2.put(full("other", 1, `2`))
	checkGet(t, s, root.ref, r3.want([]checkpoint.Blob{
		full("msgs", 1, `["hi"]`), delta("msgs", 2, 1, `["there"]`), delta("msgs", 3, 2, `["a different third"]`), full("title", 2, `"T3"`),
	}))
	checkGet(t, s, child.ref, c3.want([]checkpoint.Blob{full("inner", 1, `"x"`), delta("inner", 2, 1, `"z"`)}))
	checkGet(t, s, only2.ref, o3.want([]checkpoint.Blob{full("other", 1, `2`)}))
	checkSame(t, "run 1's checkpoints after run 3", before[""], snapshot(t, s, root.ref)[1:])
}

// testDeleteRunKeepsNeededBlobs deletes the first of three runs whose later
// checkpoints still need its blobs, and the middle run of another thread.
func testDeleteRunKeepsNeededBlobs(t *testing.T, s checkpoint.Saver) {
	th := newThread(t, s, "main")
	th.run = "run-1"
	th.put(full("msgs", 1, `["one"]`), full("title", 1, `"T"`))
	th.run = "run-2"
	b := th.put(delta("msgs", 2, 1, `["two"]`))
	th.run = "run-3"
	c := th.put(delta("msgs", 3, 2, `["three"]`))
	deleteRun(t, s, th.ref.ThreadID, "run-1", 1)
	checkIDs(t, "after deleting run 1", idsOf(c, b), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkGet(t, s, c.ref, c.want([]checkpoint.Blob{
		full("msgs", 1, `["one"]`), delta("msgs", 2, 1, `["two"]`), delta("msgs", 3, 2, `["three"]`), full("title", 1, `"T"`),
	}))
	checkGet(t, s, b.ref, b.want([]checkpoint.Blob{full("msgs", 1, `["one"]`), delta("msgs", 2, 1, `["two"]`), full("title", 1, `"T"`)}))
	// The blobs kept are still the stored ones: carrying one again with
	// other content is refused.
	cp, md := th.next(full("msgs", 1, `["changed"]`))
	if _, err := s.Put(context.Background(), at(th.ref, th.latest), cp, md); err == nil {
		t.Error("Put changing a blob that a remaining checkpoint needs succeeded, want an error")
	}

	// Deleting the middle run leaves the last one readable, and it stays
	// the latest.
	mid := newThread(t, s, "middle")
	mid.run = "run-1"
	m1 := mid.put(full("k", 1, `1`))
	mid.run = "run-2"
	mid.put(delta("k", 2, 1, `[2]`))
	mid.run = "run-3"
	m3 := mid.put(delta("k", 3, 2, `[3]`))
	deleteRun(t, s, mid.ref.ThreadID, "run-2", 1)
	checkIDs(t, "after deleting the middle run", idsOf(m3, m1), listIDs(t, s, mid.ref, checkpoint.ListOptions{}))
	checkGet(t, s, mid.ref, m3.want([]checkpoint.Blob{full("k", 1, `1`), delta("k", 2, 1, `[2]`), delta("k", 3, 2, `[3]`)}))
}

// testDeleteRunEdges checks unknown runs and threads, an empty run ID, a
// canceled context, and that other threads are untouched.
func testDeleteRunEdges(t *testing.T, s checkpoint.Saver) {
	th := newThread(t, s, "main")
	a := th.put(full("k", 1, `1`))
	other := newThread(t, s, "other")
	o := other.put(full("k", 1, `1`))

	deleteRun(t, s, th.ref.ThreadID, "no-such-run", 0)
	deleteRun(t, s, uniqueThread(t, "missing"), "run-1", 0)
	if _, err := s.DeleteRun(context.Background(), th.ref.ThreadID, ""); err == nil {
		t.Error("DeleteRun with an empty run ID succeeded, want an error")
	}
	if _, err := s.DeleteRun(context.Background(), "", "run-1"); err == nil {
		t.Error("DeleteRun with an empty thread ID succeeded, want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := s.DeleteRun(ctx, th.ref.ThreadID, "run-1"); !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("DeleteRun with a canceled context = %d, %v; want 0, context.Canceled", n, err)
	}
	checkGet(t, s, a.ref, a.want([]checkpoint.Blob{full("k", 1, `1`)}))

	deleteRun(t, s, th.ref.ThreadID, "run-1", 1)
	checkNotFound(t, s, th.ref)
	checkGet(t, s, o.ref, o.want([]checkpoint.Blob{full("k", 1, `1`)}))
	// The emptied thread starts afresh.
	th.latest, th.versions = "", map[string]uint64{}
	b := th.put(full("k", 1, `"new"`))
	checkGet(t, s, th.ref, b.want([]checkpoint.Blob{full("k", 1, `"new"`)}))
}

// testDeleteRunConcurrentPut deletes a run while another writer keeps
// appending to the same namespace with deltas on the latest state it read,
// retrying on conflict. Afterwards none of the run's checkpoints is left,
// every checkpoint the writer stored is there, and every checkpoint reads
// back with complete chains: a Put never builds on blobs the deletion
// collected.
func testDeleteRunConcurrentPut(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	th.run = "run-1"
	th.put(full("msgs", 1, `["a"]`))
	th.run = "run-2"
	for i := range 5 {
		v := uint64(i + 2)
		th.put(delta("msgs", v, v-1, `["b"]`))
	}

	const appends = 8
	done := make(chan error, 1)
	var stored []string
	go func() {
		defer close(done)
		attempt := uint64(1000)
		for len(stored) < appends {
			attempt++
			latest, err := s.Get(ctx, th.ref)
			if err != nil {
				done <- err
				return
			}
			// Every attempt uses a new, larger version, so a retry never
			// reuses a version with other content.
			v, next := latest.Checkpoint.Versions["msgs"], attempt
			cp := checkpoint.Checkpoint{
				ID:       checkpoint.NewID(),
				Versions: map[string]uint64{"msgs": next},
				Blobs:    []checkpoint.Blob{delta("msgs", next, v, `["c"]`)},
				Created:  now(),
			}
			md := checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: latest.Metadata.Step + 1, Parent: latest.Ref.ID, RunID: "run-3"}
			_, err = s.Put(ctx, at(th.ref, latest.Ref.ID), cp, md)
			switch {
			case errors.Is(err, checkpoint.ErrConflict):
				continue
			case err != nil:
				done <- err
				return
			}
			stored = append(stored, cp.ID)
		}
	}()
	n, err := s.DeleteRun(ctx, th.ref.ThreadID, "run-2")
	if err != nil {
		t.Fatalf("DeleteRun: %v", err)
	}
	if n != 5 {
		t.Errorf("DeleteRun removed %d checkpoints, want 5", n)
	}
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	all := snapshot(t, s, th.ref)
	seen := map[string]bool{}
	for _, tup := range all {
		if tup.Metadata.RunID == "run-2" {
			t.Errorf("checkpoint %s of the deleted run is still listed", tup.Ref.ID)
		}
		seen[tup.Ref.ID] = true
	}
	for _, id := range stored {
		if !seen[id] {
			t.Errorf("checkpoint %s that the writer stored is missing", id)
		}
	}
	if len(all) != 1+len(stored) {
		t.Errorf("the namespace lists %d checkpoints, want %d (run 1's and the writer's)", len(all), 1+len(stored))
	}
}
