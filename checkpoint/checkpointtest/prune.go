package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// prune calls Prune and checks how many checkpoints it removed.
func prune(t *testing.T, s checkpoint.Saver, opts checkpoint.PruneOptions, want int) {
	t.Helper()
	n, err := s.Prune(context.Background(), opts)
	if err != nil {
		t.Fatalf("Prune(%+v): %v", opts, err)
	}
	if n != want {
		t.Errorf("Prune(%+v) removed %d checkpoints, want %d", opts, n, want)
	}
}

func testPruneByCount(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	sub := th.namespace("sub")
	other := newThread(t, s, "other")
	f1, t1 := full("msgs", 1, `["a"]`), full("title", 1, `"T"`)
	f4 := full("msgs", 4, `["a","b","c","d"]`)
	d5, d6 := delta("msgs", 5, 4, `["e"]`), delta("msgs", 6, 5, `["f"]`)
	c1 := th.put(f1, t1)
	c2 := th.put(delta("msgs", 2, 1, `["b"]`))
	c3 := th.put(delta("msgs", 3, 2, `["c"]`))
	c4 := th.put(f4)
	c5 := th.put(d5)
	c6 := th.put(d6)
	if err := s.PutWrites(ctx, c1.ref, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "msgs", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}
	s1 := sub.put(full("k", 1, `1`))
	s2 := sub.put(full("k", 2, `2`))
	s3 := sub.put(delta("k", 3, 2, `[3]`))
	var others []stored
	for i := range 3 {
		others = append(others, other.put(full("k", uint64(i+1), `"o"`)))
	}

	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID}, 0)
	checkIDs(t, "List after Prune without limits", idsOf(c6, c5, c4, c3, c2, c1), listIDs(t, s, th.ref, checkpoint.ListOptions{}))

	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID, KeepLatest: 2}, 5)
	checkIDs(t, "List root after Prune", idsOf(c6, c5), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List sub after Prune", idsOf(s3, s2), listIDs(t, s, sub.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List of another thread after Prune", idsOf(others[2], others[1], others[0]), listIDs(t, s, other.ref, checkpoint.ListOptions{}))
	for _, st := range []stored{c1, c2, c3, c4, s1} {
		checkNotFound(t, s, st.ref)
	}
	err := s.PutWrites(ctx, c1.ref, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "msgs", Value: json.RawMessage(`1`)}})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("PutWrites on a pruned checkpoint: error = %v, want ErrNotFound", err)
	}
	// Kept checkpoints still rebuild, including from blobs older than
	// themselves (title's, written by the pruned c1).
	checkGet(t, s, c5.ref, c5.want([]checkpoint.Blob{f4, d5, t1}))
	checkGet(t, s, c6.ref, c6.want([]checkpoint.Blob{f4, d5, d6, t1}))
	checkGet(t, s, s3.ref, s3.want([]checkpoint.Blob{full("k", 2, `2`), delta("k", 3, 2, `[3]`)}))
	// New checkpoints build on the kept blobs.
	d7 := delta("msgs", 7, 6, `["g"]`)
	c7 := th.put(d7)
	checkGet(t, s, c7.ref, c7.want([]checkpoint.Blob{f4, d5, d6, d7, t1}))

	// The latest checkpoint is never removed.
	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID, KeepLatest: 1}, 3)
	checkIDs(t, "List root after keeping 1", idsOf(c7), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List sub after keeping 1", idsOf(s3), listIDs(t, s, sub.ref, checkpoint.ListOptions{}))
	checkGet(t, s, th.ref, c7.want([]checkpoint.Blob{f4, d5, d6, d7, t1}))
	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID, KeepLatest: 1}, 0)
	checkGet(t, s, th.ref, c7.want([]checkpoint.Blob{f4, d5, d6, d7, t1}))
	prune(t, s, checkpoint.PruneOptions{ThreadID: uniqueThread(t, "missing"), KeepLatest: 1}, 0)
}

func testPruneByAge(t *testing.T, s checkpoint.Saver) {
	recent := time.Now().Add(-time.Minute)
	th := newThread(t, s, "main")
	f1, t1 := full("msgs", 1, `["a"]`), full("title", 1, `"T"`)
	d2, d3, d4 := delta("msgs", 2, 1, `["b"]`), delta("msgs", 3, 2, `["c"]`), delta("msgs", 4, 3, `["d"]`)
	c0 := th.putAt(time.Now().Add(-72*time.Hour), f1, t1)
	c1 := th.putAt(time.Now().Add(-48*time.Hour), d2)
	c2 := th.putAt(recent, d3)
	c3 := th.putAt(recent, d4)

	old := newThread(t, s, "old")
	o0 := old.putAt(time.Now().Add(-72*time.Hour), full("k", 1, `1`))
	o1 := old.putAt(time.Now().Add(-48*time.Hour), full("k", 2, `2`))

	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID, OlderThan: 24 * time.Hour}, 2)
	checkIDs(t, "List after Prune by age", idsOf(c3, c2), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkNotFound(t, s, c0.ref)
	checkNotFound(t, s, c1.ref)
	// The blobs of pruned checkpoints that kept ones build on survive.
	checkGet(t, s, c2.ref, c2.want([]checkpoint.Blob{f1, d2, d3, t1}))
	checkGet(t, s, c3.ref, c3.want([]checkpoint.Blob{f1, d2, d3, d4, t1}))
	checkIDs(t, "List of another thread", idsOf(o1, o0), listIDs(t, s, old.ref, checkpoint.ListOptions{}))

	// Every checkpoint is old, but the latest stays.
	prune(t, s, checkpoint.PruneOptions{ThreadID: old.ref.ThreadID, OlderThan: 24 * time.Hour}, 1)
	checkIDs(t, "List after pruning an old thread", idsOf(o1), listIDs(t, s, old.ref, checkpoint.ListOptions{}))
	checkGet(t, s, old.ref, o1.want([]checkpoint.Blob{full("k", 2, `2`)}))
}

func testPruneBothLimits(t *testing.T, s checkpoint.Saver) {
	recent := time.Now().Add(-time.Minute)
	th := newThread(t, s, "main")
	f1 := full("k", 1, `[1]`)
	d2, d3, d4 := delta("k", 2, 1, `[2]`), delta("k", 3, 2, `[3]`), delta("k", 4, 3, `[4]`)
	c0 := th.putAt(recent, f1)
	c1 := th.putAt(recent, d2)
	c2 := th.putAt(time.Now().Add(-48*time.Hour), d3)
	c3 := th.putAt(recent, d4)

	// A checkpoint is removed when either limit says so: c0 is beyond the
	// newest 3, c2 is too old.
	prune(t, s, checkpoint.PruneOptions{ThreadID: th.ref.ThreadID, KeepLatest: 3, OlderThan: 24 * time.Hour}, 2)
	checkIDs(t, "List after Prune with both limits", idsOf(c3, c1), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkNotFound(t, s, c0.ref)
	checkNotFound(t, s, c2.ref)
	checkGet(t, s, c1.ref, c1.want([]checkpoint.Blob{f1, d2}))
	checkGet(t, s, c3.ref, c3.want([]checkpoint.Blob{f1, d2, d3, d4}))
}

func testPruneAllThreads(t *testing.T, s checkpoint.Saver) {
	// Only this subtest writes checkpoints this old, so pruning every
	// thread by this age touches nothing else in a shared Saver.
	ancient := time.Now().AddDate(-20, 0, 0)
	olderThan := 10 * 365 * 24 * time.Hour
	a, b := newThread(t, s, "a"), newThread(t, s, "b")
	bsub := b.namespace("sub")
	var as, bs, subs []stored
	for i := range 3 {
		as = append(as, a.putAt(ancient, full("k", uint64(i+1), `"a"`)))
		bs = append(bs, b.putAt(ancient, full("k", uint64(i+1), `"b"`)))
		subs = append(subs, bsub.putAt(ancient, full("k", uint64(i+1), `"s"`)))
	}
	n, err := s.Prune(context.Background(), checkpoint.PruneOptions{OlderThan: olderThan})
	if err != nil {
		t.Fatal(err)
	}
	if n < 6 {
		t.Errorf("Prune of every thread removed %d checkpoints, want at least 6", n)
	}
	checkIDs(t, "List a", idsOf(as[2]), listIDs(t, s, a.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List b", idsOf(bs[2]), listIDs(t, s, b.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List b sub", idsOf(subs[2]), listIDs(t, s, bsub.ref, checkpoint.ListOptions{}))
	checkGet(t, s, bsub.ref, subs[2].want([]checkpoint.Blob{full("k", 3, `"s"`)}))
}

func testConcurrentThreads(t *testing.T, s checkpoint.Saver) {
	const goroutines, perThread = 16, 20
	threads := make([]*thread, goroutines)
	puts := make([][]stored, goroutines)
	for g := range threads {
		threads[g] = newThread(t, s, fmt.Sprintf("g%d", g))
	}
	// blob returns version v of key k: a full snapshot every 5 versions,
	// deltas in between.
	blob := func(g int, v uint64) checkpoint.Blob {
		data := fmt.Sprintf(`{"g":%d,"v":%d}`, g, v)
		if (v-1)%5 == 0 {
			return full("k", v, data)
		}
		return delta("k", v, v-1, data)
	}
	var wg sync.WaitGroup
	for g, th := range threads {
		wg.Go(func() {
			for i := range perThread {
				blobs := []checkpoint.Blob{blob(g, uint64(i+1))}
				if i == 0 {
					blobs = append(blobs, full("owner", 1, fmt.Sprintf("%d", g)))
				}
				cp, md := th.next(blobs...)
				st, err := th.tryPut(cp, md)
				if err != nil {
					t.Error(err)
					return
				}
				puts[g] = append(puts[g], st)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for g, th := range threads {
		checkIDs(t, th.ref.ThreadID, idsOf(puts[g]...), reversed(listIDs(t, s, th.ref, checkpoint.ListOptions{})))
		for i, st := range puts[g] {
			v := uint64(i + 1)
			var chain []checkpoint.Blob
			for u := v - (v-1)%5; u <= v; u++ {
				chain = append(chain, blob(g, u))
			}
			chain = append(chain, full("owner", 1, fmt.Sprintf("%d", g)))
			checkGet(t, s, st.ref, st.want(chain))
		}
	}
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// testConcurrentWriters races writers on one thread namespace: each reads
// the latest checkpoint and puts the next one, retrying on ErrConflict. No
// update may be lost: the history is one chain holding every success.
func testConcurrentWriters(t *testing.T, s checkpoint.Saver) {
	const writers, each, maxAttempts = 8, 5, 10000
	ctx := context.Background()
	ref := checkpoint.Ref{ThreadID: uniqueThread(t, "shared"), Namespace: "ns"}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			done := 0
			for attempt := 0; done < each; attempt++ {
				if attempt == maxAttempts {
					t.Errorf("writer %d: %d successes after %d attempts", w, done, attempt)
					return
				}
				parent, step, version := "", 0, uint64(1)
				tup, err := s.Get(ctx, ref)
				switch {
				case err == nil:
					parent, step, version = tup.Ref.ID, tup.Metadata.Step+1, tup.Checkpoint.Versions["n"]+1
				case !errors.Is(err, checkpoint.ErrNotFound):
					t.Errorf("writer %d: Get: %v", w, err)
					return
				}
				cp := checkpoint.Checkpoint{
					ID:       checkpoint.NewID(),
					Versions: map[string]uint64{"n": version},
					Blobs:    []checkpoint.Blob{full("n", version, fmt.Sprintf(`{"writer":%d}`, w))},
					Created:  now(),
				}
				md := checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: step, Parent: parent, RunID: fmt.Sprint(w)}
				_, err = s.Put(ctx, at(ref, parent), cp, md)
				switch {
				case err == nil:
					done++
				case !errors.Is(err, checkpoint.ErrConflict):
					t.Errorf("writer %d: Put: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	tuples, err := collect(s.List(ctx, ref, checkpoint.ListOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(tuples) != writers*each {
		t.Fatalf("List has %d checkpoints, want %d", len(tuples), writers*each)
	}
	perWriter := map[string]int{}
	for i, tup := range tuples {
		wantParent := ""
		if i+1 < len(tuples) {
			wantParent = tuples[i+1].Ref.ID
		}
		if tup.Metadata.Parent != wantParent {
			t.Errorf("checkpoint %d from the newest has parent %q, want %q", i, tup.Metadata.Parent, wantParent)
		}
		if want := uint64(len(tuples) - i); tup.Checkpoint.Versions["n"] != want {
			t.Errorf("checkpoint %d from the newest has version %d, want %d", i, tup.Checkpoint.Versions["n"], want)
		}
		perWriter[tup.Metadata.RunID]++
	}
	for w := range writers {
		if n := perWriter[fmt.Sprint(w)]; n != each {
			t.Errorf("writer %d has %d checkpoints, want %d", w, n, each)
		}
	}
}
