package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
)

type exportingSaver interface {
	checkpoint.Saver
	checkpoint.Exporter
}

// fillForExport writes into s a thread with a root namespace and a
// subgraph one: delta chains, a fork, pending writes, metadata extras, and
// a prune that leaves blobs only older checkpoints' chains reach.
func fillForExport(t *testing.T, s checkpoint.Saver, label string) (thread string, nss []string) {
	t.Helper()
	ctx := context.Background()
	root := newThread(t, s, label)
	root.put(full("messages", 1, `["hi"]`), full("n", 1, `1`))
	root.put(delta("messages", 2, 1, `["a"]`))
	third := root.put(delta("messages", 3, 2, `["b"]`), full("n", 3, `3`))
	cp, md := root.next(delta("messages", 4, 3, `["c"]`))
	md.Extra = map[string]string{"label": "four"}
	last := root.putCP(cp, md)
	// A fork: its parent is older than the latest.
	fork, fmd := root.next()
	fork.Versions = third.cp.Versions
	fmd.Source, fmd.Parent = checkpoint.SourceFork, third.ref.ID
	if _, err := s.Put(ctx, last.ref, fork, fmd); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		ref  checkpoint.Ref
		task string
	}{{third.ref, "t1"}, {last.ref, "t1"}, {last.ref, "t2"}} {
		writes := []checkpoint.PendingWrite{
			{TaskID: w.task, Index: 0, Key: "messages", Value: json.RawMessage(`["w"]`)},
			{TaskID: w.task, Index: 1, Key: checkpoint.WriteInterrupt, Value: json.RawMessage(`{"value":"ask"}`)},
			{TaskID: w.task, Index: 2, Key: checkpoint.WriteStep, Value: json.RawMessage(`{"name":"charge","call":0,"value":"pay-1"}`)},
		}
		if err := s.PutWrites(ctx, w.ref, w.task, writes); err != nil {
			t.Fatal(err)
		}
	}
	sub := root.namespace("tools:1")
	sub.put(full("x", 1, `{"a":1}`))
	sub.put(delta("x", 2, 1, `{"b":2}`))
	if _, err := s.Prune(ctx, checkpoint.PruneOptions{ThreadID: root.ref.ThreadID, KeepLatest: 3}); err != nil {
		t.Fatal(err)
	}
	return root.ref.ThreadID, []string{"", "tools:1"}
}

// sameThread checks that every namespace of thread lists the same tuples
// (blob chains and writes included) in a and b.
func sameThread(t *testing.T, a, b checkpoint.Saver, thread string, nss []string) {
	t.Helper()
	for _, ns := range nss {
		ref := checkpoint.Ref{ThreadID: thread, Namespace: ns}
		want, err := collect(a.List(context.Background(), ref, checkpoint.ListOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := collect(b.List(context.Background(), ref, checkpoint.ListOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("%s: the source lists nothing", ref)
		}
		if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
			t.Errorf("%s: the copy differs (-source +copy):\n%s", ref, diff)
		}
	}
}

// testExport checks checkpoint.Exporter and checkpoint.CopyTo on a Saver
// that implements it: paging, every namespace listed, a copy into Memory
// and from Memory that reads back identically, re-running, resuming and
// refusing a diverged target.
func testExport(t *testing.T, s checkpoint.Saver) {
	src, ok := s.(exportingSaver)
	if !ok {
		t.Skipf("%T does not implement checkpoint.Exporter", s)
	}
	ctx := context.Background()
	thread, nss := fillForExport(t, s, "a")
	other, _ := fillForExport(t, s, "b")

	// Threads pages in byte order and lists both threads.
	var all []string
	for after := ""; ; {
		page, err := src.Threads(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 || !slices.IsSorted(page) || (len(page) > 0 && page[0] <= after) {
			t.Fatalf("Threads(%q, 2) = %q: want at most 2, sorted, after the cursor", after, page)
		}
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	mine := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return !strings.HasPrefix(id, t.Name()+"/") })
	if want := slices.Sorted(slices.Values([]string{thread, other})); !slices.Equal(mine, want) {
		t.Errorf("Threads listed %q of this test, want %q", mine, want)
	}
	if _, err := src.Threads(ctx, "", 0); err == nil {
		t.Error("Threads with limit 0 is not an error")
	}
	if got, err := src.Namespaces(ctx, thread); err != nil || !slices.Equal(got, nss) {
		t.Errorf("Namespaces = %q, %v; want %q", got, err, nss)
	}
	if got, err := src.Namespaces(ctx, thread+"-missing"); err != nil || len(got) != 0 {
		t.Errorf("Namespaces of a missing thread = %q, %v; want none", got, err)
	}
	// CheckpointIDs pages oldest first and matches List reversed.
	ref := checkpoint.Ref{ThreadID: thread}
	var ids []string
	for {
		page, err := src.CheckpointIDs(ctx, at(ref, lastOr(ids, "")), 2)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, page...)
		if len(page) < 2 {
			break
		}
	}
	want := listIDs(t, s, ref, checkpoint.ListOptions{})
	slices.Reverse(want)
	checkIDs(t, "CheckpointIDs", want, ids)

	// Copy out to Memory and back into the saver under test.
	mem := checkpoint.NewMemory()
	st, err := checkpoint.CopyTo(ctx, src, mem, thread)
	if err != nil {
		t.Fatal(err)
	}
	if st.Namespaces != 2 || st.Checkpoints != len(ids)+2 || st.Writes != 9 || st.Skipped != 0 {
		t.Errorf("CopyTo stats %+v, want 2 namespaces, %d checkpoints, 9 writes", st, len(ids)+2)
	}
	sameThread(t, s, mem, thread, nss)
	again, err := checkpoint.CopyTo(ctx, src, mem, thread)
	if err != nil || again.Checkpoints != 0 || again.Skipped != st.Checkpoints {
		t.Errorf("CopyTo again: %+v, %v; want nothing written, %d skipped", again, err, st.Checkpoints)
	}
	sameThread(t, s, mem, thread, nss)

	memThread, _ := fillForExport(t, mem, "from-memory")
	if _, err := checkpoint.CopyTo(ctx, mem, s, memThread); err != nil {
		t.Fatal(err)
	}
	sameThread(t, mem, s, memThread, nss)

	// A source that moved on is resumed: only the new checkpoint is put.
	latest := get(t, s, ref)
	cp := latest.Checkpoint
	cp.ID, cp.Blobs = checkpoint.NewID(), []checkpoint.Blob{full("n", 9, `9`)}
	cp.Versions = map[string]uint64{"n": 9}
	if _, err := s.Put(ctx, latest.Ref, cp, checkpoint.Metadata{Source: checkpoint.SourceUpdate, Step: 9, Parent: latest.Ref.ID}); err != nil {
		t.Fatal(err)
	}
	if st, err := checkpoint.CopyTo(ctx, src, mem, thread); err != nil || st.Checkpoints != 1 {
		t.Errorf("CopyTo after one more checkpoint: %+v, %v; want 1 written", st, err)
	}
	sameThread(t, s, mem, thread, nss)

	// A target with a checkpoint the source lacks is refused.
	head := get(t, mem, ref)
	cp.ID = checkpoint.NewID()
	if _, err := mem.Put(ctx, head.Ref, cp, checkpoint.Metadata{Source: checkpoint.SourceUpdate, Step: 10, Parent: head.Ref.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.CopyTo(ctx, src, mem, thread); !errors.Is(err, checkpoint.ErrDiverged) {
		t.Errorf("CopyTo onto a diverged target: %v, want ErrDiverged", err)
	}
}

func lastOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[len(s)-1]
}
