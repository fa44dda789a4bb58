package checkpoint

import (
	"context"
	"testing"
)

// TestMemoryRemembersNamespaceSafely puts checkpoints around every method
// that takes a namespace out of Memory (or puts one in), and between two
// namespaces in turn, and requires each Put to land where Get finds it:
// Put remembers the namespace it stored in (see namespace), and a
// remembered namespace that Memory no longer holds would refuse the next
// Put as a conflict or swallow it.
func TestMemoryRemembersNamespaceSafely(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	put := func(thread, ns, head, run string) string {
		t.Helper()
		id := NewID()
		if _, err := m.Put(ctx, Ref{ThreadID: thread, Namespace: ns, ID: head}, Checkpoint{ID: id}, Metadata{RunID: run}); err != nil {
			t.Fatalf("put in %s/%q after %q: %v", thread, ns, head, err)
		}
		return id
	}
	latest := func(thread, ns string) string {
		t.Helper()
		tp, err := m.Get(ctx, Ref{ThreadID: thread, Namespace: ns})
		if err != nil {
			t.Fatalf("get %s/%q: %v", thread, ns, err)
		}
		return tp.Ref.ID
	}
	check := func(thread, ns, want string) {
		t.Helper()
		if got := latest(thread, ns); got != want {
			t.Fatalf("%s/%q: latest is %s, want %s", thread, ns, got, want)
		}
	}

	a := put("t", "", "", "r1")
	check("t", "", put("t", "", a, "r1"))
	if err := m.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	b := put("t", "", "", "r2") // a new namespace, not the deleted one
	check("t", "", b)

	if n, err := m.DeleteRun(ctx, "t", "r2"); err != nil || n != 1 {
		t.Fatalf("DeleteRun = %d, %v; want 1", n, err)
	}
	c := put("t", "", "", "r3")
	check("t", "", c)

	// two namespaces and two threads in turn
	x := put("t", "sub", "", "r3")
	c = put("t", "", c, "r3")
	x = put("t", "sub", x, "r3")
	u := put("u", "", "", "r4")
	c = put("t", "", c, "r3")
	check("t", "", c)
	check("t", "sub", x)
	check("u", "", u)

	if err := m.CopyThread(ctx, "t", "v"); err != nil {
		t.Fatal(err)
	}
	v := put("v", "", c, "r5")
	c = put("t", "", c, "r3") // the original goes on apart from its copy
	check("v", "", v)
	check("t", "", c)

	// DeleteRun that leaves another namespace of the thread
	if n, err := m.DeleteRun(ctx, "v", "r5"); err != nil || n != 1 {
		t.Fatalf("DeleteRun = %d, %v; want 1", n, err)
	}
	check("v", "sub", x)
	if err := m.DeleteThread(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	w := put("v", "sub", "", "r6")
	check("v", "sub", w)
}

// TestMemoryRemembersBlobListSafely removes the only checkpoint that needs
// a key's blobs, so that the namespace drops the key's list, and puts a
// blob of that key again: Put remembers the list it last stored in (see
// listFor), and a remembered list the namespace no longer holds would
// take the blob where Get does not find it.
func TestMemoryRemembersBlobListSafely(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	ref := Ref{ThreadID: "t"}
	put := func(head string, blobs ...Blob) string {
		t.Helper()
		vers := map[string]uint64{}
		for _, b := range blobs {
			vers[b.Key] = b.Version
		}
		id := NewID()
		if _, err := m.Put(ctx, Ref{ThreadID: "t", ID: head}, Checkpoint{ID: id, Versions: vers, Blobs: blobs}, Metadata{}); err != nil {
			t.Fatalf("put after %q: %v", head, err)
		}
		return id
	}
	full := func(key string, v uint64, data string) Blob {
		return Blob{Key: key, Version: v, Kind: Full, Data: []byte(data)}
	}
	a := put("", full("a", 1, "1"))
	b := put(a, full("a", 2, "2")) // the list of "a" is remembered
	c := put(b, full("b", 1, "x")) // no version of "a": b's blobs are only needed by a and b
	if n, err := m.RemoveCheckpoints(ctx, ref, []string{a, b}); err != nil || n != 2 {
		t.Fatalf("RemoveCheckpoints = %d, %v; want 2", n, err)
	}
	if l := m.threads["t"][""].blobs["a"]; l != nil {
		t.Fatalf("the list of key a is still held after its checkpoints went: %d blobs", l.count())
	}
	d := put(c, full("a", 3, "3"))
	for _, id := range []string{c, d} {
		tp, err := m.Get(ctx, Ref{ThreadID: "t", ID: id})
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if id == d && (len(tp.Checkpoint.Blobs) != 1 || tp.Checkpoint.Blobs[0].Key != "a" || string(tp.Checkpoint.Blobs[0].Data) != "3") {
			t.Fatalf("get %s: blobs %+v, want a@3", id, tp.Checkpoint.Blobs)
		}
	}
	d2 := put(d, full("a", 4, "4"), full("b", 2, "y"))
	if tp, err := m.Get(ctx, Ref{ThreadID: "t", ID: d2}); err != nil || len(tp.Checkpoint.Blobs) != 2 {
		t.Fatalf("get %s: %v, %d blobs; want 2", d2, err, len(tp.Checkpoint.Blobs))
	}
}
