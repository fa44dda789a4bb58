package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
)

func testPutGet(t *testing.T, s checkpoint.Saver) {
	th := newThread(t, s, "main")
	a := th.put(full("msgs", 1, `["hi"]`), full("title", 1, `"T"`))
	b := th.put(delta("msgs", 2, 1, `["there"]`))

	checkGet(t, s, th.ref, b.want([]checkpoint.Blob{
		full("msgs", 1, `["hi"]`), delta("msgs", 2, 1, `["there"]`), full("title", 1, `"T"`),
	}))
	checkGet(t, s, b.ref, b.want([]checkpoint.Blob{
		full("msgs", 1, `["hi"]`), delta("msgs", 2, 1, `["there"]`), full("title", 1, `"T"`),
	}))
	checkGet(t, s, a.ref, a.want([]checkpoint.Blob{full("msgs", 1, `["hi"]`), full("title", 1, `"T"`)}))

	checkNotFound(t, s, checkpoint.Ref{ThreadID: uniqueThread(t, "missing")})
	checkNotFound(t, s, checkpoint.Ref{ThreadID: th.ref.ThreadID, ID: checkpoint.NewID()})
	checkNotFound(t, s, checkpoint.Ref{ThreadID: th.ref.ThreadID, Namespace: "no-such-namespace"})
}

func testPutValidation(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	older := checkpoint.NewID()
	a := th.put(full("k", 1, `"one"`))

	reject := func(what string, cp checkpoint.Checkpoint, md checkpoint.Metadata) {
		t.Helper()
		if _, err := s.Put(ctx, at(th.ref, md.Parent), cp, md); err == nil {
			t.Errorf("Put with %s succeeded, want an error", what)
		} else if errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Put with %s: error %v wraps ErrConflict, but the parent was right", what, err)
		}
	}
	cp, md := th.next()
	if _, err := s.Put(ctx, checkpoint.Ref{}, cp, md); err == nil {
		t.Error("Put with an empty thread ID succeeded, want an error")
	}
	cp, md = th.next()
	cp.ID = ""
	reject("an empty checkpoint ID", cp, md)
	cp, md = th.next()
	cp.ID = a.ref.ID
	reject("the ID of an existing checkpoint", cp, md)
	cp, md = th.next()
	cp.ID = older
	reject("an ID that sorts before the latest", cp, md)
	cp, md = th.next(delta("k", 2, 2, `["x"]`))
	reject("a delta whose base is not older than its version", cp, md)
	cp, md = th.next(checkpoint.Blob{Key: "k", Version: 2, Kind: 0, Data: json.RawMessage(`1`)})
	reject("a blob of unknown kind", cp, md)
	cp, md = th.next(full("k", 1, `"changed"`))
	reject("a stored key version with other content", cp, md)
	cp, md = th.next(full("j", 1, `"a"`), full("j", 1, `"b"`))
	reject("two different blobs for one key version", cp, md)

	// Nothing of the rejected Puts was written.
	checkIDs(t, "List after rejected Puts", idsOf(a), listIDs(t, s, th.ref, checkpoint.ListOptions{}))
	checkGet(t, s, th.ref, a.want([]checkpoint.Blob{full("k", 1, `"one"`)}))

	// Carrying a stored blob again unchanged is accepted.
	b := th.put(full("k", 1, `"one"`))
	checkGet(t, s, th.ref, b.want([]checkpoint.Blob{full("k", 1, `"one"`)}))
}

func testConflict(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	base := th.put(full("x", 1, `"base"`))

	// Two writers read base and both write version 2 of x.
	cp1, md1 := th.next(full("x", 2, `"one"`))
	cp2, md2 := th.next(full("x", 2, `"two"`))
	first := th.putCP(cp1, md1)
	_, err := s.Put(ctx, at(th.ref, md2.Parent), cp2, md2)
	if !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("second Put with stale parent: error = %v, want ErrConflict", err)
	}
	checkGet(t, s, th.ref, first.want([]checkpoint.Blob{full("x", 2, `"one"`)}))
	checkGet(t, s, base.ref, base.want([]checkpoint.Blob{full("x", 1, `"base"`)}))
	checkIDs(t, "List after conflict", idsOf(first, base), listIDs(t, s, th.ref, checkpoint.ListOptions{}))

	conflict := func(what string, ref checkpoint.Ref, parent string) {
		t.Helper()
		cp, md := th.next(full("y", 1, `"y"`))
		md.Parent = parent
		if _, err := s.Put(ctx, at(ref, parent), cp, md); !errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Put with %s: error = %v, want ErrConflict", what, err)
		}
	}
	conflict("an older parent", th.ref, base.ref.ID)
	conflict("no parent while the namespace has checkpoints", th.ref, "")
	conflict("an unknown parent", th.ref, checkpoint.NewID())
	empty := th.namespace("empty")
	conflict("a parent in a namespace without checkpoints", empty.ref, first.ref.ID)
	checkIDs(t, "List after conflicts", idsOf(first, base), listIDs(t, s, th.ref, checkpoint.ListOptions{}))

	checkNotFound(t, s, empty.ref)

	// The writer that lost reloads and goes on from the new latest.
	second := th.put(full("x", 3, `"two"`))
	checkGet(t, s, th.ref, second.want([]checkpoint.Blob{full("x", 3, `"two"`)}))

	// A fork names an older checkpoint as its parent; it is accepted as long
	// as the writer read the latest one (ref.ID), and its parent is kept.
	cp, md := th.next(full("z", 1, `"fork"`))
	md.Parent = base.ref.ID
	fork, err := s.Put(ctx, at(th.ref, second.ref.ID), cp, md)
	if err != nil {
		t.Fatalf("Put of a fork: %v", err)
	}
	tup, err := s.Get(ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	if tup.Metadata.Parent != base.ref.ID {
		t.Errorf("fork's parent = %q, want the older checkpoint %q", tup.Metadata.Parent, base.ref.ID)
	}
}

func testNamespaces(t *testing.T, s checkpoint.Saver) {
	root := newThread(t, s, "main")
	sub := root.namespace("child:1")
	deeper := root.namespace("child:1|grandchild:2")

	r1 := root.put(full("k", 1, `"root"`))
	s1 := sub.put(full("k", 1, `"sub"`))
	d1 := deeper.put(full("k", 1, `"deeper"`))
	r2 := root.put(full("k", 2, `"root 2"`))

	checkGet(t, s, root.ref, r2.want([]checkpoint.Blob{full("k", 2, `"root 2"`)}))
	checkGet(t, s, r1.ref, r1.want([]checkpoint.Blob{full("k", 1, `"root"`)}))
	checkGet(t, s, sub.ref, s1.want([]checkpoint.Blob{full("k", 1, `"sub"`)}))
	checkGet(t, s, deeper.ref, d1.want([]checkpoint.Blob{full("k", 1, `"deeper"`)}))
	checkNotFound(t, s, checkpoint.Ref{ThreadID: root.ref.ThreadID, Namespace: sub.ref.Namespace, ID: r1.ref.ID})
	checkNotFound(t, s, checkpoint.Ref{ThreadID: root.ref.ThreadID, ID: s1.ref.ID})

	checkIDs(t, "List root", idsOf(r2, r1), listIDs(t, s, root.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List sub", idsOf(s1), listIDs(t, s, sub.ref, checkpoint.ListOptions{}))
	checkIDs(t, "List deeper", idsOf(d1), listIDs(t, s, deeper.ref, checkpoint.ListOptions{}))
}

func testBlobChains(t *testing.T, s checkpoint.Saver) {
	th := newThread(t, s, "main")
	f1, t1 := full("msgs", 1, `["a"]`), full("title", 1, `"T"`)
	d2, d3 := delta("msgs", 2, 1, `["b"]`), delta("msgs", 3, 2, `["c"]`)
	f4 := full("msgs", 4, `["a","b","c","d"]`)
	d5 := delta("msgs", 5, 4, `["e"]`)
	d7 := delta("msgs", 7, 5, `["g"]`) // versions may skip; the chain follows Base
	z1 := full("zeta", 1, `{"n":1}`)

	type step struct {
		st    stored
		chain []checkpoint.Blob
	}
	steps := []step{
		{th.put(f1, t1), []checkpoint.Blob{f1, t1}},
		{th.put(d2), []checkpoint.Blob{f1, d2, t1}},
		{th.put(d3), []checkpoint.Blob{f1, d2, d3, t1}},
		{th.put(f4), []checkpoint.Blob{f4, t1}},
		{th.put(d5, z1), []checkpoint.Blob{f4, d5, t1, z1}},
		{th.put(), []checkpoint.Blob{f4, d5, t1, z1}},
		{th.put(), []checkpoint.Blob{f4, d5, t1, z1}},
		{th.put(d7), []checkpoint.Blob{f4, d5, d7, t1, z1}},
	}
	for _, st := range steps {
		checkGet(t, s, st.st.ref, st.st.want(st.chain))
	}
	last := steps[len(steps)-1]
	checkGet(t, s, th.ref, last.st.want(last.chain))

	empty := newThread(t, s, "empty")
	e := empty.put()
	if tup := get(t, s, e.ref); len(tup.Checkpoint.Blobs) != 0 || len(tup.Checkpoint.Versions) != 0 {
		t.Errorf("Get of a checkpoint without versions returned blobs %v, versions %v", tup.Checkpoint.Blobs, tup.Checkpoint.Versions)
	}
}

func testBrokenChain(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	check := func(what string, th *thread, st stored, key string) {
		t.Helper()
		tup, err := s.Get(ctx, st.ref)
		if err == nil {
			t.Errorf("Get of a checkpoint with %s succeeded: %+v", what, tup)
			return
		}
		if tup != nil {
			t.Errorf("Get of a checkpoint with %s returned a Tuple with its error: %+v", what, tup)
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Get of a checkpoint with %s: error %v wraps ErrNotFound; a broken chain is not a missing checkpoint", what, err)
		}
		checkErrorNames(t, err, th.ref.ThreadID, th.ref.Namespace, st.ref.ID, key)
		if _, err := collect(s.List(ctx, th.ref, checkpoint.ListOptions{})); err == nil {
			t.Errorf("List over a checkpoint with %s yielded no error", what)
		}
	}

	th := newThread(t, s, "missing-base").namespace("sub:1")
	check("a delta whose base is missing", th, th.put(delta("msgs", 2, 1, `["b"]`)), "msgs")

	th = newThread(t, s, "missing-blob").namespace("sub:2")
	cp, md := th.next(full("ok", 1, `1`))
	cp.Versions["lost"] = 3
	check("a version without a blob", th, th.putCP(cp, md), "lost")

	th = newThread(t, s, "missing-older").namespace("sub:3")
	th.put(full("ok", 1, `1`))
	check("a delta chain with a gap", th, th.put(delta("ok", 3, 2, `[3]`)), "ok")
}

// deepFixture builds a checkpoint that uses every field, the same every call
// but for the ID.
func deepFixture(th *thread, id string, created time.Time) (checkpoint.Checkpoint, checkpoint.Metadata) {
	cp, md := th.next(full("k", 1, `{"a":[1,2]}`))
	cp.ID = id
	cp.Created = created
	cp.Next = []checkpoint.Task{{ID: "t1", Node: "tool", Path: "1", Payload: json.RawMessage(`{"q":"x"}`)}}
	cp.Waiting = map[string][]string{"join": {"a", "b"}}
	cp.Deferred = []string{"summarize"}
	md.Extra = map[string]string{"label": "v"}
	return cp, md
}

func testDeepCopy(t *testing.T, s checkpoint.Saver) {
	ctx := context.Background()
	th := newThread(t, s, "main")
	id, created := checkpoint.NewID(), now()
	cp, md := deepFixture(th, id, created)
	wantCP, wantMD := deepFixture(th, id, created)
	st := th.putCP(cp, md)
	writes := []checkpoint.PendingWrite{{TaskID: "t1", Index: 0, Key: "k", Value: json.RawMessage(`{"v":1}`)}}
	if err := s.PutWrites(ctx, st.ref, "t1", writes); err != nil {
		t.Fatal(err)
	}
	wantWrites := []checkpoint.PendingWrite{{TaskID: "t1", Index: 0, Key: "k", Value: json.RawMessage(`{"v":1}`)}}
	want := stored{ref: st.ref, cp: wantCP, md: wantMD}.want(wantCP.Blobs, wantWrites...)

	// Changing the inputs after the calls changes nothing stored.
	cp.Versions["k"] = 99
	cp.Blobs[0].Data[2] = 'X'
	cp.Next[0].Payload[2] = 'X'
	cp.Waiting["join"][0] = "zzz"
	cp.Deferred[0] = "zzz"
	md.Extra["label"] = "zzz"
	writes[0].Value[2] = 'X'
	writes[0].Key = "zzz"
	checkGet(t, s, st.ref, want)

	// Changing what Get and List return changes nothing stored.
	mutate := func(tup *checkpoint.Tuple) {
		tup.Checkpoint.Versions["k"] = 99
		tup.Checkpoint.Blobs[0].Data[2] = 'X'
		tup.Checkpoint.Next[0].Payload[2] = 'X'
		tup.Checkpoint.Waiting["join"][0] = "zzz"
		tup.Checkpoint.Deferred[0] = "zzz"
		tup.Metadata.Extra["label"] = "zzz"
		tup.Writes[0].Value[2] = 'X'
	}
	mutate(get(t, s, st.ref))
	checkGet(t, s, st.ref, want)
	tuples, err := collect(s.List(ctx, th.ref, checkpoint.ListOptions{}))
	if err != nil || len(tuples) != 1 {
		t.Fatalf("List = %d tuples, %v; want 1", len(tuples), err)
	}
	mutate(tuples[0])
	checkGet(t, s, st.ref, want)
	tuples, err = collect(s.List(ctx, th.ref, checkpoint.ListOptions{}))
	if err != nil || len(tuples) != 1 {
		t.Fatalf("List = %d tuples, %v; want 1", len(tuples), err)
	}
	if diff := cmp.Diff(want, tuples[0], cmpOpts); diff != "" {
		t.Errorf("List after changing its output mismatch (-want +got):\n%s", diff)
	}
}

func testCanceledContext(t *testing.T, s checkpoint.Saver) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	th := newThread(t, s, "main")
	live := newThread(t, s, "live")
	st := live.put(full("k", 1, `1`))

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: error = %v, want context.Canceled", what, err)
		}
	}
	cp, md := th.next(full("k", 1, `1`))
	_, err := s.Put(ctx, th.ref, cp, md)
	check("Put", err)
	_, err = s.Get(ctx, st.ref)
	check("Get", err)
	_, err = collect(s.List(ctx, st.ref, checkpoint.ListOptions{}))
	check("List", err)
	check("PutWrites", s.PutWrites(ctx, st.ref, "t", []checkpoint.PendingWrite{{Index: 0, Key: "k", Value: json.RawMessage(`1`)}}))
	check("DeleteThread", s.DeleteThread(ctx, live.ref.ThreadID))
	check("CopyThread", s.CopyThread(ctx, live.ref.ThreadID, uniqueThread(t, "copy")))
	_, err = s.Prune(ctx, checkpoint.PruneOptions{ThreadID: live.ref.ThreadID, KeepLatest: 1})
	check("Prune", err)

	checkNotFound(t, s, th.ref)
	checkGet(t, s, st.ref, st.want([]checkpoint.Blob{full("k", 1, `1`)}))
}

func testCorrupt(t *testing.T, s checkpoint.Saver) {
	c, ok := s.(Corrupter)
	if !ok {
		t.Skip("the Saver does not implement checkpointtest.Corrupter")
	}
	ctx := context.Background()
	const task = "writer-task"
	for _, d := range []Damage{
		{Kind: DamageEmptyObject},
		{Kind: DamageNull},
		{Kind: DamageFlipCheckpoint},
		{Kind: DamageFlipBlob, Key: "title", Version: 1},
		{Kind: DamageFlipWrite, TaskID: task},
	} {
		t.Run(string(d.Kind), func(t *testing.T) {
			th := newThread(t, s, "main")
			a := th.put(full("title", 1, `"one"`))
			if err := s.PutWrites(ctx, a.ref, task, []checkpoint.PendingWrite{{Index: 0, Key: "title", Value: json.RawMessage(`"written"`)}}); err != nil {
				t.Fatal(err)
			}
			b := th.put(full("title", 2, `"two"`))
			err := c.Corrupt(a.ref, d)
			if errors.Is(err, ErrNotApplicable) {
				t.Skipf("Corrupt(%s, %s): %v", a.ref, d.Kind, err)
			}
			if err != nil {
				t.Fatalf("Corrupt(%s, %s): %v", a.ref, d.Kind, err)
			}
			tup, err := s.Get(ctx, a.ref)
			if err == nil {
				t.Fatalf("Get of a checkpoint damaged by %s succeeded: %+v", d.Kind, tup)
			}
			if tup != nil {
				t.Errorf("Get of a damaged checkpoint returned a Tuple with its error: %+v", tup)
			}
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("Get of a checkpoint damaged by %s: error %v does not wrap ErrCorrupt", d.Kind, err)
			}
			checkErrorNames(t, err, a.ref.ThreadID, a.ref.ID)
			switch d.Kind {
			case DamageFlipBlob:
				checkErrorNames(t, err, `"title"`)
			case DamageFlipWrite:
				checkErrorNames(t, err, task)
			}
			// Listing reaches the damaged checkpoint after the good one
			// and stops there with the same kind of error.
			got, err := collect(s.List(ctx, th.ref, checkpoint.ListOptions{}))
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("List over a damaged checkpoint: error = %v, want ErrCorrupt", err)
			}
			checkIDs(t, "List before the damaged checkpoint", idsOf(b), ids(got))
			checkGet(t, s, b.ref, b.want([]checkpoint.Blob{full("title", 2, `"two"`)}))
		})
	}
}
