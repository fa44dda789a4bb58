package checkpointtest

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// testPutBatch checks checkpoint.BatchPutter on a Saver that has it: the
// batch's checkpoints read back as Puts would have stored them (each the
// next one's parent, blobs shared across the batch stored once), a stale
// writer or a bad batch stores none of them, and the transaction hook
// runs once per batch and undoes it when it fails. On every Saver,
// checkpoint.PutAll stores a batch (with PutBatch or one Put each).
func testPutBatch(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	all := newThread(t, s, "putall")
	cp1, md1 := all.next(full("k", 1, `1`))
	cp2, md2 := cp1, md1
	cp2.ID, cp2.Versions, cp2.Blobs = checkpoint.NewID(), map[string]uint64{"k": 2}, []checkpoint.Blob{delta("k", 2, 1, `[2]`)}
	md2.Step, md2.Parent, md2.Source = 0, cp1.ID, checkpoint.SourceLoop
	ref, err := checkpoint.PutAll(ctx, s, all.ref, []checkpoint.Entry{{Checkpoint: cp1, Metadata: md1}, {Checkpoint: cp2, Metadata: md2}})
	if err != nil {
		t.Fatalf("PutAll: %v", err)
	}
	s2 := stored{ref: at(all.ref, cp2.ID), cp: cp2, md: md2}
	if ref != s2.ref {
		t.Errorf("PutAll returned %+v, want %+v", ref, s2.ref)
	}
	checkGet(t, s, all.ref, s2.want([]checkpoint.Blob{full("k", 1, `1`), delta("k", 2, 1, `[2]`)}))
	checkIDs(t, "List after PutAll", []string{cp2.ID, cp1.ID}, listIDs(t, s, all.ref, checkpoint.ListOptions{}))

	b, ok := s.(checkpoint.BatchPutter)
	if !ok {
		t.Skipf("%T does not store batches (checkpoint.BatchPutter)", s)
	}
	th := newThread(t, s, "main")
	c0 := th.put(full("k", 1, `1`))

	// batch builds n checkpoints following th's latest, as th.put would,
	// without storing them; done advances th past them.
	batch := func(blobs ...[]checkpoint.Blob) ([]checkpoint.Entry, func() []stored) {
		save := *th
		save.versions = maps.Clone(th.versions)
		var es []checkpoint.Entry
		for _, bs := range blobs {
			cp, md := th.next(bs...)
			es = append(es, checkpoint.Entry{Checkpoint: cp, Metadata: md})
			th.latest, th.step, th.versions = cp.ID, th.step+1, maps.Clone(cp.Versions)
		}
		*th = save
		return es, func() []stored {
			var out []stored
			for _, e := range es {
				ref := checkpoint.Ref{ThreadID: th.ref.ThreadID, Namespace: th.ref.Namespace, ID: e.Checkpoint.ID}
				out = append(out, stored{ref: ref, cp: e.Checkpoint, md: e.Metadata})
				th.latest, th.step, th.versions = e.Checkpoint.ID, th.step+1, maps.Clone(e.Checkpoint.Versions)
			}
			return out
		}
	}

	es, done := batch([]checkpoint.Blob{delta("k", 2, 1, `[2]`), full("m", 1, `"a"`)}, []checkpoint.Blob{delta("k", 3, 2, `[3]`), full("m", 1, `"a"`)})
	var hooked int
	okHook := txhook.With(ctx, func(context.Context, any) error { hooked++; return nil })
	ref, err = b.PutBatch(okHook, c0.ref, es)
	if err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	st := done()
	if ref != st[1].ref {
		t.Errorf("PutBatch returned %+v, want the last entry's %+v", ref, st[1].ref)
	}
	if hooked > 1 {
		t.Errorf("the transaction hook ran %d times for one batch, want once", hooked)
	}
	if st[0].md.Parent != c0.ref.ID || st[1].md.Parent != st[0].ref.ID {
		t.Fatalf("fixture: parents %q, %q", st[0].md.Parent, st[1].md.Parent)
	}
	checkGet(t, s, st[0].ref, st[0].want([]checkpoint.Blob{full("k", 1, `1`), delta("k", 2, 1, `[2]`), full("m", 1, `"a"`)}))
	checkGet(t, s, st[1].ref, st[1].want([]checkpoint.Blob{full("k", 1, `1`), delta("k", 2, 1, `[2]`), delta("k", 3, 2, `[3]`), full("m", 1, `"a"`)}))
	checkGet(t, s, th.ref, st[1].want([]checkpoint.Blob{full("k", 1, `1`), delta("k", 2, 1, `[2]`), delta("k", 3, 2, `[3]`), full("m", 1, `"a"`)}))
	checkIDs(t, "List after the batch", idsOf(st[1], st[0], c0), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	head := st[1]

	// Nothing of a refused batch is stored, whichever entry is at fault.
	refused := func(what string, ref checkpoint.Ref, es []checkpoint.Entry, want error) {
		t.Helper()
		_, err := b.PutBatch(ctx, ref, es)
		if err == nil {
			t.Errorf("PutBatch %s succeeded, want an error", what)
		} else if want != nil && !errors.Is(err, want) {
			t.Errorf("PutBatch %s: err = %v, want %v", what, err, want)
		}
		checkIDs(t, "List after PutBatch "+what, idsOf(head, st[0], c0), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
		for _, e := range es {
			checkNotFound(t, s, at(th.ref, e.Checkpoint.ID))
		}
	}
	es, _ = batch([]checkpoint.Blob{full("n", 1, `1`)}, []checkpoint.Blob{full("n", 2, `2`)})
	refused("by a stale writer", c0.ref, es, checkpoint.ErrConflict)
	es, _ = batch([]checkpoint.Blob{full("n", 1, `1`)}, []checkpoint.Blob{full("k", 2, `"other"`)})
	refused("reusing a stored blob version in its second entry", head.ref, es, nil)
	es, _ = batch([]checkpoint.Blob{full("n", 1, `1`)}, []checkpoint.Blob{full("n", 1, `"other"`)})
	refused("storing one blob version twice with other content", head.ref, es, nil)
	es, _ = batch(nil, nil)
	es[0], es[1] = es[1], es[0]
	refused("whose IDs do not grow", head.ref, es, nil)
	refused("with no entry", head.ref, nil, nil)

	// A failing hook undoes the batch, and runs once.
	es, done = batch(nil, nil)
	boom := errors.New("the hook fails")
	hooked = 0
	failing := txhook.With(ctx, func(context.Context, any) error { hooked++; return boom })
	_, err = b.PutBatch(failing, head.ref, es)
	if hooked > 0 {
		if !errors.Is(err, boom) || hooked != 1 {
			t.Errorf("PutBatch with a failing hook: err = %v after %d hook calls, want the hook's error after 1", err, hooked)
		}
		checkIDs(t, "List after a failed hook", idsOf(head, st[0], c0), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
		if _, err := b.PutBatch(ctx, head.ref, es); err != nil {
			t.Fatalf("PutBatch after the failed hook: %v", err)
		}
		done()
	} else if err != nil {
		t.Fatalf("PutBatch of a saver without hooks: %v", err)
	} else {
		done()
	}
	// The namespace goes on from the batch's last checkpoint with Put.
	th.put(full("n", 1, `1`))
}
