package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
)

func testList(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	var cps []stored
	for i := range 5 {
		cp, md := th.next(full("k", uint64(i+1), `"v"`))
		md.Extra = map[string]string{"branch": []string{"a", "b"}[i%2]}
		if i == 3 {
			md.Source = checkpoint.SourceUpdate
		}
		cps = append(cps, th.putCP(cp, md))
	}
	c0, c1, c2, c3, c4 := cps[0], cps[1], cps[2], cps[3], cps[4]
	if err := s.PutWrites(ctx, c2.ref, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "k", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}

	// Every listed tuple is what Get returns, blobs and writes included.
	all, err := collect(s.List(ctx, th.ref, checkpoint.ListOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	checkIDs(t, "List all", idsOf(c4, c3, c2, c1, c0), ids(all))
	for _, tup := range all {
		if diff := cmp.Diff(get(t, s, tup.Ref), tup, cmpOpts); diff != "" {
			t.Errorf("List tuple %s differs from Get (-get +list):\n%s", tup.Ref, diff)
		}
	}
	if len(all) == 5 && len(all[2].Writes) != 1 {
		t.Errorf("List tuple %s has writes %v, want the one written", all[2].Ref, all[2].Writes)
	}

	cases := []struct {
		name string
		opts checkpoint.ListOptions
		want []stored
	}{
		{"filter source", checkpoint.ListOptions{Filter: map[string]string{"source": "update"}}, []stored{c3}},
		{"filter extra", checkpoint.ListOptions{Filter: map[string]string{"branch": "a"}}, []stored{c4, c2, c0}},
		{"filter step", checkpoint.ListOptions{Filter: map[string]string{"step": "2"}}, []stored{c2}},
		{"filter parent", checkpoint.ListOptions{Filter: map[string]string{"parent": c0.ref.ID}}, []stored{c1}},
		{"filter two fields", checkpoint.ListOptions{Filter: map[string]string{"branch": "a", "step": "4"}}, []stored{c4}},
		{"filter no match", checkpoint.ListOptions{Filter: map[string]string{"branch": "a", "step": "1"}}, nil},
		{"filter unknown field", checkpoint.ListOptions{Filter: map[string]string{"nosuch": "x"}}, nil},
		{"empty filter", checkpoint.ListOptions{Filter: map[string]string{}}, []stored{c4, c3, c2, c1, c0}},
		{"before", checkpoint.ListOptions{Before: c3.ref.ID}, []stored{c2, c1, c0}},
		{"before oldest", checkpoint.ListOptions{Before: c0.ref.ID}, nil},
		{"limit", checkpoint.ListOptions{Limit: 2}, []stored{c4, c3}},
		{"limit above count", checkpoint.ListOptions{Limit: 50}, []stored{c4, c3, c2, c1, c0}},
		{"before and limit", checkpoint.ListOptions{Before: c3.ref.ID, Limit: 2}, []stored{c2, c1}},
		{"before and filter", checkpoint.ListOptions{Before: c4.ref.ID, Filter: map[string]string{"branch": "a"}}, []stored{c2, c0}},
		{"filter and limit", checkpoint.ListOptions{Filter: map[string]string{"branch": "b"}, Limit: 1}, []stored{c3}},
	}
	for _, tc := range cases {
		checkIDs(t, "List "+tc.name, idsOf(tc.want...), listIDs(t, s, th.ref, tc.opts))
	}

	checkIDs(t, "List of a missing thread", nil, listIDs(t, s, checkpoint.Ref{ThreadID: uniqueThread(t, "missing")}, checkpoint.ListOptions{}))
	checkIDs(t, "List of a missing namespace", nil, listIDs(t, s, th.namespace("nope").ref, checkpoint.ListOptions{}))
}

func testListBreak(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	var cps []stored
	for i := range 4 {
		cps = append(cps, th.put(full("k", uint64(i+1), `1`)))
	}
	// A sequence that yields after the loop body breaks makes the range
	// statement panic, failing the test.
	for _, stop := range []int{1, 2} {
		var got []string
		for tup, err := range s.List(ctx, th.ref, checkpoint.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tup.Ref.ID)
			if len(got) == stop {
				break
			}
		}
		want := []string{cps[3].ref.ID, cps[2].ref.ID}[:stop]
		checkIDs(t, "List stopped early", want, got)
	}
	// The loop body may write to the Saver while iterating.
	n := 0
	for tup, err := range s.List(ctx, th.ref, checkpoint.ListOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if _, err := s.Put(ctx, at(th.ref, tup.Ref.ID), checkpoint.Checkpoint{ID: checkpoint.NewID(), Created: now()},
			checkpoint.Metadata{Source: checkpoint.SourceUpdate, Parent: tup.Ref.ID}); err != nil {
			t.Fatalf("Put inside a List loop: %v", err)
		}
	}
	if n != 1 {
		t.Errorf("List with Limit 1 yielded %d tuples", n)
	}
	if got := listIDs(t, s, th.ref, checkpoint.ListOptions{}); len(got) != 5 {
		t.Errorf("List after a Put inside a List loop has %d checkpoints, want 5", len(got))
	}
}

func testPutWrites(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	c1 := th.put(full("k", 1, `1`))
	c2 := th.put(full("k", 2, `2`))
	chain1 := []checkpoint.Blob{full("k", 1, `1`)}

	w := func(task string, index int, key, value string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{TaskID: task, Index: index, Key: key, Value: json.RawMessage(value)}
	}
	putWrites := func(ref checkpoint.Ref, task string, ws ...checkpoint.PendingWrite) {
		t.Helper()
		if err := s.PutWrites(ctx, ref, task, ws); err != nil {
			t.Fatalf("PutWrites(%s, %q): %v", ref, task, err)
		}
	}

	putWrites(c1.ref, "task-b", w("task-b", 1, "x", `"b1"`), w("task-b", 0, "y", `"b0"`))
	putWrites(c1.ref, "task-a", w("task-a", 0, checkpoint.WriteError, `"boom"`))
	checkGet(t, s, c1.ref, c1.want(chain1,
		w("task-a", 0, checkpoint.WriteError, `"boom"`), w("task-b", 0, "y", `"b0"`), w("task-b", 1, "x", `"b1"`)))
	checkGet(t, s, c2.ref, c2.want([]checkpoint.Blob{full("k", 2, `2`)}))

	// Writing a task again replaces its writes; other tasks keep theirs.
	putWrites(c1.ref, "task-b", w("task-b", 0, "z", `"new"`))
	checkGet(t, s, c1.ref, c1.want(chain1, w("task-a", 0, checkpoint.WriteError, `"boom"`), w("task-b", 0, "z", `"new"`)))
	putWrites(c1.ref, "task-a")
	checkGet(t, s, c1.ref, c1.want(chain1, w("task-b", 0, "z", `"new"`)))

	// A write without a task ID gets the task's.
	putWrites(c2.ref, "task-c", checkpoint.PendingWrite{Index: 0, Key: checkpoint.WriteResume, Value: json.RawMessage(`{"ok":true}`)})
	checkGet(t, s, c2.ref, c2.want([]checkpoint.Blob{full("k", 2, `2`)}, w("task-c", 0, checkpoint.WriteResume, `{"ok":true}`)))

	// Bad writes are rejected and change nothing.
	if err := s.PutWrites(ctx, c1.ref, "task-b", []checkpoint.PendingWrite{w("task-b", 0, "a", `1`), w("task-b", 0, "b", `2`)}); err == nil {
		t.Error("PutWrites with a repeated index succeeded, want an error")
	}
	if err := s.PutWrites(ctx, c1.ref, "task-b", []checkpoint.PendingWrite{w("other", 0, "a", `1`)}); err == nil {
		t.Error("PutWrites with a write of another task succeeded, want an error")
	}
	checkGet(t, s, c1.ref, c1.want(chain1, w("task-b", 0, "z", `"new"`)))

	missing := []checkpoint.Ref{
		{ThreadID: th.ref.ThreadID, ID: checkpoint.NewID()},
		{ThreadID: th.ref.ThreadID, Namespace: "nope", ID: c1.ref.ID},
		{ThreadID: uniqueThread(t, "missing"), ID: c1.ref.ID},
	}
	for _, ref := range missing {
		err := s.PutWrites(ctx, ref, "task-a", []checkpoint.PendingWrite{w("task-a", 0, "k", `1`)})
		if !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("PutWrites(%s) error = %v, want ErrNotFound", ref, err)
		}
	}
	checkNotFound(t, s, missing[2])
}

func testDeleteThread(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	sub := th.namespace("sub")
	other := newThread(t, s, "other")
	r := th.put(full("k", 1, `1`))
	sub.put(full("k", 1, `2`))
	o := other.put(full("k", 1, `3`))
	if err := s.PutWrites(ctx, r.ref, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "k", Value: json.RawMessage(`1`)}}); err != nil {
		t.Fatal(err)
	}

	if err := s.DeleteThread(ctx, th.ref.ThreadID); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	checkNotFound(t, s, th.ref)
	checkNotFound(t, s, sub.ref)
	checkNotFound(t, s, r.ref)
	checkIDs(t, "List of a deleted thread", nil, listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List of a deleted thread's namespace", nil, listIDs(t, s, sub.ref, checkpoint.ListOptions{}))
	checkGet(t, s, other.ref, o.want([]checkpoint.Blob{full("k", 1, `3`)}))

	if err := s.DeleteThread(ctx, th.ref.ThreadID); err != nil {
		t.Errorf("DeleteThread of a deleted thread: %v", err)
	}
	if err := s.DeleteThread(ctx, uniqueThread(t, "never")); err != nil {
		t.Errorf("DeleteThread of a missing thread: %v", err)
	}

	// The thread starts afresh: no parent, and old blob versions are free.
	fresh := &thread{t: t, s: s, ref: th.ref, versions: map[string]uint64{}}
	f := fresh.put(full("k", 1, `"fresh"`))
	checkGet(t, s, th.ref, f.want([]checkpoint.Blob{full("k", 1, `"fresh"`)}))
}

func testCopyThread(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	src := newThread(t, s, "src")
	sub := src.namespace("sub")
	src.put(full("msgs", 1, `["a"]`), full("title", 1, `"T"`))
	c2 := src.put(delta("msgs", 2, 1, `["b"]`))
	src.put(delta("msgs", 3, 2, `["c"]`))
	sub.put(full("k", 1, `"sub"`))
	if err := s.PutWrites(ctx, c2.ref, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "msgs", Value: json.RawMessage(`"w"`)}}); err != nil {
		t.Fatal(err)
	}
	snapshot := func(ref checkpoint.Ref) []*checkpoint.Tuple {
		t.Helper()
		tuples, err := collect(s.List(ctx, ref, checkpoint.ListOptions{}))
		if err != nil {
			t.Fatalf("List(%s): %v", ref, err)
		}
		return tuples
	}
	srcRoot, srcSub := snapshot(src.ref), snapshot(sub.ref)

	dstID := uniqueThread(t, "dst")
	if err := s.CopyThread(ctx, src.ref.ThreadID, dstID); err != nil {
		t.Fatalf("CopyThread: %v", err)
	}
	dst := &thread{t: t, s: s, ref: checkpoint.Ref{ThreadID: dstID}, latest: src.latest, step: src.step, versions: src.versions}
	dstSub := checkpoint.Ref{ThreadID: dstID, Namespace: sub.ref.Namespace}
	retarget := func(tuples []*checkpoint.Tuple) []*checkpoint.Tuple {
		out := make([]*checkpoint.Tuple, len(tuples))
		for i, tup := range tuples {
			c := *tup
			c.Ref.ThreadID = dstID
			out[i] = &c
		}
		return out
	}
	checkCopy := func(what string, want []*checkpoint.Tuple, ref checkpoint.Ref) {
		t.Helper()
		if diff := cmp.Diff(want, snapshot(ref), cmpOpts); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
		}
	}
	checkCopy("copied root namespace", retarget(srcRoot), dst.ref)
	checkCopy("copied sub namespace", retarget(srcSub), dstSub)

	// The copy goes on by itself; the original does not move.
	d4 := dst.put(delta("msgs", 4, 3, `["d"]`))
	checkCopy("original after a Put on the copy", srcRoot, src.ref)
	// The copy keeps its blobs when the original is deleted.
	if err := s.DeleteThread(ctx, src.ref.ThreadID); err != nil {
		t.Fatal(err)
	}
	checkCopy("copied sub namespace after deleting the original", retarget(srcSub), dstSub)
	checkGet(t, s, dst.ref, d4.want([]checkpoint.Blob{
		full("msgs", 1, `["a"]`), delta("msgs", 2, 1, `["b"]`), delta("msgs", 3, 2, `["c"]`), delta("msgs", 4, 3, `["d"]`),
		full("title", 1, `"T"`),
	}))

	// Copying onto a thread that has checkpoints fails and changes nothing.
	other := newThread(t, s, "other")
	other.put(full("k", 1, `"other"`))
	before := snapshot(dst.ref)
	if err := s.CopyThread(ctx, other.ref.ThreadID, dstID); err == nil {
		t.Error("CopyThread onto a thread with checkpoints succeeded, want an error")
	}
	if err := s.CopyThread(ctx, dstID, dstID); err == nil {
		t.Error("CopyThread of a thread onto itself succeeded, want an error")
	}
	checkCopy("target after a refused copy", before, dst.ref)

	missing := uniqueThread(t, "missing")
	if err := s.CopyThread(ctx, missing, uniqueThread(t, "dst2")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("CopyThread of a missing thread: error = %v, want ErrNotFound", err)
	}
}
