package checkpointtest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
)

type retainingSaver interface {
	checkpoint.Saver
	checkpoint.Exporter
	checkpoint.Remover
}

// asRetaining returns s as a retainingSaver, or skips the test.
func asRetaining(t *testing.T, s checkpoint.Saver) retainingSaver {
	t.Helper()
	r, ok := s.(retainingSaver)
	if !ok {
		t.Skip("the saver does not implement checkpoint.Exporter and checkpoint.Remover")
	}
	return r
}

// fork stores, after the thread's latest checkpoint, a copy of from's
// versions (a fork: its parent is from) made at created, carrying blobs on top.
func (th *thread) fork(from stored, created time.Time, blobs ...checkpoint.Blob) stored {
	th.t.Helper()
	th.versions = maps.Clone(from.cp.Versions)
	cp, md := th.next(blobs...)
	cp.Created = created.UTC().Truncate(time.Millisecond)
	md.Source, md.Parent = checkpoint.SourceFork, from.ref.ID
	ref, err := th.s.Put(context.Background(), at(th.ref, th.latest), cp, md)
	if err != nil {
		th.t.Fatalf("fork %s from %s: %v", th.ref, from.ref.ID, err)
	}
	th.latest = cp.ID
	th.step++
	th.versions = maps.Clone(cp.Versions)
	return stored{ref: ref, cp: cp, md: md}
}

// readAll reads every checkpoint of ref's namespace with List and Get.
func readAll(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref) map[string]*checkpoint.Tuple {
	t.Helper()
	tuples, err := collect(s.List(context.Background(), ref, checkpoint.ListOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*checkpoint.Tuple, len(tuples))
	for _, tup := range tuples {
		out[tup.Ref.ID] = tup
	}
	return out
}

// sameBytes checks that the kept checkpoints read back, by Get and by List,
// exactly as before: their JSON encodings are equal byte for byte.
func sameBytes(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, before map[string]*checkpoint.Tuple, kept []string) {
	t.Helper()
	after := readAll(t, s, ref)
	checkIDs(t, "List after Retain", slices.Sorted(slices.Values(kept)), slices.Sorted(maps.Keys(after)))
	enc := func(tup *checkpoint.Tuple) string {
		b, err := json.Marshal(tup)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, id := range kept {
		want := enc(before[id])
		if got := enc(after[id]); got != want {
			t.Errorf("List after Retain: checkpoint %s reads back differently:\n%s", id, cmp.Diff(want, got))
		}
		if got := enc(get(t, s, at(ref, id))); got != want {
			t.Errorf("Get after Retain: checkpoint %s reads back differently:\n%s", id, cmp.Diff(want, got))
		}
	}
}

// testRetention applies a retention policy to a thread with a main line, a
// fork, superseded branches old and new, a waiting interrupt, durable-step
// writes, pending writes and a protected checkpoint, in two namespaces.
func testRetention(t *testing.T, s checkpoint.Saver) {
	rs := asRetaining(t, s)
	ctx := context.Background()
	old := time.Now().Add(-72 * time.Hour)
	th := newThread(t, s, "main")
	c1 := th.put(full("msgs", 1, `["a"]`), full("title", 1, `"T"`))
	c2 := th.put(delta("msgs", 2, 1, `["b"]`))
	c3 := th.put(delta("msgs", 3, 2, `["c"]`))
	c4 := th.put(delta("msgs", 4, 3, `["d"]`))
	c5 := th.put(delta("msgs", 5, 4, `["e"]`))
	c6 := th.put(delta("msgs", 6, 5, `["f"]`))
	write := func(st stored, task, key string) {
		t.Helper()
		if err := s.PutWrites(ctx, st.ref, task, []checkpoint.PendingWrite{{TaskID: task, Key: key, Value: json.RawMessage(`"v"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	write(c3, "t3", "msgs")
	write(c6, "t6", "msgs")
	g1 := th.fork(c2, old)                      // an old superseded branch: goes
	w1 := th.fork(c1, old)                      // an old branch head with a waiting interrupt: stays
	write(w1, "ask", checkpoint.WriteInterrupt) //
	h1 := th.fork(c4, old)                      // an old branch head with a durable step: stays
	write(h1, "slow", checkpoint.WriteStep)     //
	f1 := th.fork(c3, time.Now())               // the fork the thread went on from
	f2 := th.put(delta("msgs", 7, 3, `["g"]`))  //
	f3 := th.put(delta("msgs", 8, 7, `["h"]`), full("title", 2, `"U"`))
	write(f3, "durable", checkpoint.WriteStep)

	sub := th.namespace("sub")
	s1 := sub.put(full("k", 1, `[1]`))
	s2 := sub.put(delta("k", 2, 1, `[2]`))
	s3 := sub.put(delta("k", 3, 2, `[3]`))
	s4 := sub.put(delta("k", 4, 3, `[4]`))

	root := checkpoint.Ref{ThreadID: th.ref.ThreadID}
	before, beforeSub := readAll(t, s, root), readAll(t, s, sub.ref)

	// The zero policy keeps everything.
	st, err := checkpoint.Retain(ctx, rs, th.ref.ThreadID, checkpoint.Retention{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 0 || st.Kept != 16 || st.Namespaces != 2 {
		t.Errorf("Retain with the zero policy = %+v, want 16 kept in 2 namespaces", st)
	}

	policy := checkpoint.Retention{KeepLast: 3, ForksOlderThan: 24 * time.Hour}
	st, err = checkpoint.Retain(ctx, rs, th.ref.ThreadID, policy, checkpoint.ProtectIDs{c1.ref.ID: true})
	if err != nil {
		t.Fatal(err)
	}
	// Root: the main line f3 f2 f1 c3 c2 c1 keeps f3 f2 f1 and the
	// protected c1; the new superseded branch c4 c5 c6 keeps its head; the
	// old branch g1 goes, w1 and h1 stay. Sub keeps s2 s3 s4.
	keptRoot := idsOf(c1, c6, w1, h1, f1, f2, f3)
	keptSub := idsOf(s2, s3, s4)
	if want := (checkpoint.RetainStats{Namespaces: 2, Kept: len(keptRoot) + len(keptSub), Removed: 6}); st != want {
		t.Errorf("Retain = %+v, want %+v", st, want)
	}
	sameBytes(t, s, root, before, keptRoot)
	sameBytes(t, s, sub.ref, beforeSub, keptSub)
	for _, gone := range []stored{c2, c3, c4, c5, g1, s1} {
		checkNotFound(t, s, gone.ref)
	}

	// Running it again changes nothing.
	st, err = checkpoint.Retain(ctx, rs, th.ref.ThreadID, policy, checkpoint.ProtectIDs{c1.ref.ID: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 0 {
		t.Errorf("a second Retain removed %d checkpoints, want 0", st.Removed)
	}

	// The thread goes on from its latest, and a kept fork head opens.
	f4 := th.put(delta("msgs", 9, 8, `["i"]`))
	checkGet(t, s, root, f4.want([]checkpoint.Blob{
		full("msgs", 1, `["a"]`), delta("msgs", 2, 1, `["b"]`), delta("msgs", 3, 2, `["c"]`),
		delta("msgs", 7, 3, `["g"]`), delta("msgs", 8, 7, `["h"]`), delta("msgs", 9, 8, `["i"]`), full("title", 2, `"U"`),
	}))
	k1 := th.fork(c6, time.Now(), delta("msgs", 10, 6, `["j"]`))
	checkGet(t, s, root, k1.want([]checkpoint.Blob{
		full("msgs", 1, `["a"]`), delta("msgs", 2, 1, `["b"]`), delta("msgs", 3, 2, `["c"]`), delta("msgs", 4, 3, `["d"]`),
		delta("msgs", 5, 4, `["e"]`), delta("msgs", 6, 5, `["f"]`), delta("msgs", 10, 6, `["j"]`), full("title", 1, `"T"`),
	}))
}

// testRetentionForksOnly keeps the whole main line and drops only old
// superseded branches; a new branch stays whole.
func testRetentionForksOnly(t *testing.T, s checkpoint.Saver) {
	rs := asRetaining(t, s)
	ctx := context.Background()
	old := time.Now().Add(-72 * time.Hour)
	th := newThread(t, s, "main")
	c1 := th.put(full("k", 1, `1`))
	c2 := th.putAt(old, full("k", 2, `2`))
	c3 := th.putAt(old, full("k", 3, `3`)) // c2 c3: an old branch
	n1 := th.fork(c1, time.Now(), full("k", 4, `4`))
	n2 := th.put(full("k", 5, `5`)) // n1 n2: a new branch
	m1 := th.fork(c1, time.Now(), full("k", 6, `6`))
	before := readAll(t, s, th.ref)
	st, err := checkpoint.Retain(ctx, rs, th.ref.ThreadID, checkpoint.Retention{ForksOlderThan: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 2 {
		t.Errorf("Retain removed %d checkpoints, want 2 (the old branch)", st.Removed)
	}
	sameBytes(t, s, th.ref, before, idsOf(c1, n1, n2, m1))
	checkNotFound(t, s, c2.ref)
	checkNotFound(t, s, c3.ref)
}

// testRemoveCheckpoints checks Remover's edges: the latest stays, unknown
// IDs are skipped, an empty ID is an error, blobs of kept chains stay.
func testRemoveCheckpoints(t *testing.T, s checkpoint.Saver) {
	rs := asRetaining(t, s)
	ctx := context.Background()
	th := newThread(t, s, "main")
	c1 := th.put(full("k", 1, `[1]`))
	c2 := th.put(delta("k", 2, 1, `[2]`))
	c3 := th.put(delta("k", 3, 2, `[3]`))
	if _, err := rs.RemoveCheckpoints(ctx, th.ref, []string{c1.ref.ID, ""}); err == nil {
		t.Error("RemoveCheckpoints with an empty ID: no error")
	}
	if _, err := rs.RemoveCheckpoints(ctx, checkpoint.Ref{}, []string{c1.ref.ID}); err == nil {
		t.Error("RemoveCheckpoints without a thread: no error")
	}
	n, err := rs.RemoveCheckpoints(ctx, th.ref, []string{c1.ref.ID, c3.ref.ID, c1.ref.ID, checkpoint.NewID()})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("RemoveCheckpoints removed %d, want 1 (the latest stays, unknown IDs are skipped)", n)
	}
	checkIDs(t, "List after RemoveCheckpoints", idsOf(c3, c2), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkGet(t, s, c2.ref, c2.want([]checkpoint.Blob{full("k", 1, `[1]`), delta("k", 2, 1, `[2]`)}))
	n, err = rs.RemoveCheckpoints(ctx, checkpoint.Ref{ThreadID: uniqueThread(t, "missing")}, []string{c2.ref.ID})
	if err != nil || n != 0 {
		t.Errorf("RemoveCheckpoints on a missing thread = %d, %v; want 0, nil", n, err)
	}
	n, err = rs.RemoveCheckpoints(ctx, at(th.ref, ""), []string{c2.ref.ID})
	if err != nil || n != 1 {
		t.Errorf("RemoveCheckpoints = %d, %v; want 1, nil", n, err)
	}
	checkGet(t, s, th.ref, c3.want([]checkpoint.Blob{full("k", 1, `[1]`), delta("k", 2, 1, `[2]`), delta("k", 3, 2, `[3]`)}))
	if _, err := checkpoint.Retain(ctx, rs, th.ref.ThreadID, checkpoint.Retention{KeepLast: -1}, nil); err == nil {
		t.Error("Retain with a negative KeepLast: no error")
	}
}
