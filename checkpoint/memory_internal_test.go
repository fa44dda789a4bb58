package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestMemoryPruneClock prunes by age against Memory's clock rather than the
// checkpoints' Created times, and checks which blobs are collected.
func TestMemoryPruneClock(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ref := Ref{ThreadID: "t"}
	blobs := [][]Blob{
		{{Key: "a", Version: 1, Kind: Full, Data: json.RawMessage(`[1]`)}, {Key: "b", Version: 1, Kind: Full, Data: json.RawMessage(`1`)}},
		{{Key: "a", Version: 2, Kind: Delta, Base: 1, Data: json.RawMessage(`[2]`)}},
		{{Key: "a", Version: 3, Kind: Full, Data: json.RawMessage(`[1,2,3]`)}},
		{{Key: "a", Version: 4, Kind: Delta, Base: 3, Data: json.RawMessage(`[4]`)}},
	}
	parent, versions := "", map[string]uint64{}
	var ids []string
	for i, bs := range blobs {
		for _, b := range bs {
			versions[b.Key] = b.Version
		}
		cp := Checkpoint{ID: NewID(), Versions: copyVersions(versions), Blobs: bs, Created: t0.Add(time.Duration(i) * time.Hour)}
		if _, err := m.Put(ctx, Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: parent}, cp, Metadata{Step: i, Parent: parent}); err != nil {
			t.Fatal(err)
		}
		parent = cp.ID
		ids = append(ids, cp.ID)
	}

	// At t0+25h30m with OlderThan 24h, checkpoints created at t0 and t0+1h
	// are old; the rest are not.
	m.now = func() time.Time { return t0.Add(25*time.Hour + 30*time.Minute) }
	n, err := m.Prune(ctx, PruneOptions{OlderThan: 24 * time.Hour})
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2, nil", n, err)
	}
	ns := m.threads["t"][""]
	var kept []string
	for _, c := range ns.cps {
		kept = append(kept, c.id)
	}
	if got := strings.Join(kept, ","); got != strings.Join(ids[2:], ",") {
		t.Errorf("kept %s, want %s", got, strings.Join(ids[2:], ","))
	}
	// a@1 and a@2 are no longer needed; a@3, a@4 and b@1 are.
	want := map[blobID]bool{{"a", 3}: true, {"a", 4}: true, {"b", 1}: true}
	if ns.blobs.count() != len(want) {
		t.Errorf("kept %d blobs, want %d", ns.blobs.count(), len(want))
	}
	for id := range want {
		if _, ok := ns.blobs.get(id.key, id.version); !ok {
			t.Errorf("blob %v was collected but a kept checkpoint needs it", id)
		}
	}

	// Far in the future everything is old, but the latest stays.
	m.now = func() time.Time { return t0.AddDate(1, 0, 0) }
	if n, err := m.Prune(ctx, PruneOptions{OlderThan: time.Hour}); err != nil || n != 1 {
		t.Fatalf("second Prune = %d, %v; want 1, nil", n, err)
	}
	tup, err := m.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if tup.Ref.ID != ids[3] || len(tup.Checkpoint.Blobs) != 3 {
		t.Errorf("latest after Prune = %s with %d blobs, want %s with 3", tup.Ref.ID, len(tup.Checkpoint.Blobs), ids[3])
	}
}

func TestMemoryPruneNegative(t *testing.T) {
	m := NewMemory()
	for _, opts := range []PruneOptions{{KeepLatest: -1}, {OlderThan: -time.Second}} {
		if _, err := m.Prune(context.Background(), opts); err == nil {
			t.Errorf("Prune(%+v) succeeded, want an error", opts)
		}
	}
}

func TestMemoryListNegativeLimit(t *testing.T) {
	m := NewMemory()
	for _, err := range m.List(context.Background(), Ref{ThreadID: "t"}, ListOptions{Limit: -1}) {
		if err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("List with a negative limit: error = %v, want a usage error", err)
		}
		return
	}
	t.Error("List with a negative limit yielded nothing, want an error")
}

func copyVersions(v map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(v))
	for k, n := range v {
		out[k] = n
	}
	return out
}

// TestChecksumHelpersAgree checks that the allocation-free helpers compute
// the same CRC-32C as hash/crc32 over the same bytes.
func TestChecksumHelpersAgree(t *testing.T) {
	want := crc32.Checksum([]byte("key\x00value\x01\x00\x00\x00\x00\x00\x00\x00"), crc32.MakeTable(crc32.Castagnoli))
	got := ChecksumUint64(ChecksumString(0, "key", "\x00", "value"), 1)
	if got != want {
		t.Errorf("ChecksumString+ChecksumUint64 = %08x, hash/crc32 = %08x", got, want)
	}
	if got := Checksum(0, []byte("key\x00value"), []byte{1, 0, 0, 0, 0, 0, 0, 0}); got != want {
		t.Errorf("Checksum = %08x, want %08x", got, want)
	}
	// Words taken eight bytes at once give what hash/crc32 gives byte by
	// byte, whatever the bytes and the sum they continue.
	tab := crc32.MakeTable(crc32.Castagnoli)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		sum, v := rng.Uint32(), rng.Uint64()
		want := crc32.Update(sum, tab, binary.LittleEndian.AppendUint64(nil, v))
		if got := ChecksumUint64(sum, v); got != want {
			t.Fatalf("ChecksumUint64(%08x, %016x) = %08x, hash/crc32 = %08x", sum, v, got, want)
		}
	}
	b := Blob{Key: "k", Version: 2, Kind: Delta, Base: 1, Data: []byte(`[1]`)}
	c := b
	c.Data = []byte(`[2]`)
	if BlobChecksum(b) == BlobChecksum(c) {
		t.Error("BlobChecksum does not depend on the data")
	}
	if n := testing.AllocsPerRun(100, func() { BlobChecksum(b) }); n != 0 {
		t.Errorf("BlobChecksum allocates %v times, want 0", n)
	}
}

// TestBlobListSumAgrees checks the checksum Memory's Put stores for a blob
// (a word at a time for its head, by table for short data) against
// BlobChecksum and hash/crc32, across the data lengths on both sides of
// smallChecksum and whatever the sum continued.
func TestBlobListSumAgrees(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 3*smallChecksum + 2 {
		for range 50 {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			sum := rng.Uint32()
			if got, want := checksumBytes(sum, data), crc32.Update(sum, tab, data); got != want {
				t.Fatalf("checksumBytes(%08x, %d bytes) = %08x, hash/crc32 = %08x", sum, n, got, want)
			}
			if n > 0 && data[0]%4 == 0 {
				data = data[:0:0] // an empty, non-nil slice now and then
			}
			b := Blob{Key: "key" + strconv.Itoa(n), Version: rng.Uint64(), Kind: BlobKind(rng.IntN(3)), Base: rng.Uint64(), Data: data}
			l := memBlobs{}.list(b.Key)
			if got, want := l.sum(&b), BlobChecksum(b); got != want {
				t.Fatalf("blobList.sum(%+v) = %08x, BlobChecksum = %08x", b, got, want)
			}
		}
	}
}

// TestMemBlobsOrder checks the per-key blob index with versions stored out
// of order, as a fork's branch stores them, then thinned by keep.
func TestMemBlobsOrder(t *testing.T) {
	bs := make(memBlobs)
	vers := []uint64{1 << 32, 2<<32 | 7, 3<<32 | 7, 2<<32 | 9, 1<<32 | 5, 4<<32 | 7, 3<<32 | 9}
	for _, v := range vers {
		bs.set(memBlob{Blob: Blob{Key: "k", Version: v, Kind: Full, Data: []byte("1")}})
		bs.set(memBlob{Blob: Blob{Key: "j", Version: v, Kind: Full, Data: []byte("2")}})
	}
	bs.set(memBlob{Blob: Blob{Key: "k", Version: 2<<32 | 9, Kind: Full, Data: []byte("3")}}) // replaces
	if got := bs.count(); got != 2*len(vers) {
		t.Fatalf("count = %d, want %d", got, 2*len(vers))
	}
	for _, v := range vers {
		if b, ok := bs.get("k", v); !ok || b.Version != v {
			t.Errorf("get(k, %#x) = %#x, %v", v, b.Version, ok)
		}
	}
	if b, _ := bs.get("k", 2<<32|9); string(b.Data) != "3" {
		t.Errorf("the replaced blob holds %s, want 3", b.Data)
	}
	if _, ok := bs.get("k", 5<<32); ok {
		t.Error("get found a version never stored")
	}
	bs.keep(func(key string, v uint64) bool { return key == "k" && v>>32 >= 3 })
	if got := bs.count(); got != 3 {
		t.Errorf("after keep: %d blobs, want 3", got)
	}
	if _, ok := bs["j"]; ok {
		t.Error("a key with no blob left is still indexed")
	}
}

// TestMemorySlabRelease checks that removing checkpoints clears what they
// held in the namespace's slabs, so a slab kept alive by a remaining
// checkpoint does not keep the removed ones' tasks and payloads, and that
// what remains still reads back.
func TestMemorySlabRelease(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	parent := ""
	var stored []*memCheckpoint
	for i := range 4 {
		v := uint64(i+1) << 32
		cp := Checkpoint{ID: NewID(), Versions: map[string]uint64{"k": v}, Created: time.Now(),
			Blobs: []Blob{{Key: "k", Version: v, Kind: Full, Data: json.RawMessage(`1`)}},
			Next:  []Task{{ID: "t", Node: "n", Path: "send:0", Payload: json.RawMessage(`{"big":"payload"}`)}}}
		if _, err := m.PutOwned(ctx, Ref{ThreadID: "t", ID: parent}, cp, Metadata{Step: i, RunID: "r"}); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, m.threads["t"][""].get(cp.ID))
		parent = cp.ID
	}
	vers, next := stored[0].versList(), stored[0].tasks() // slices into the first slab
	if n, err := m.Prune(ctx, PruneOptions{KeepLatest: 1}); err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want 3, nil", n, err)
	}
	for i, c := range stored[:3] {
		if c.id != "" || c.more != nil || c.oneVer[0] != (memVersion{}) || c.oneTask != (memTask{}) || c.runID != "" {
			t.Errorf("removed checkpoint %d still holds %+v in its slab", i, *c)
		}
	}
	if vers[0] != (memVersion{}) || next[0].Payload != nil {
		t.Errorf("a removed checkpoint's versions %v or task %+v stay in the slab", vers, next[0])
	}
	got, err := m.Get(ctx, Ref{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref.ID != parent || got.Checkpoint.Versions["k"] != 4<<32 || string(got.Checkpoint.Next[0].Payload) != `{"big":"payload"}` {
		t.Errorf("the kept checkpoint reads back as %+v", got.Checkpoint)
	}
}

// TestMemoryStoredSizes keeps what Memory stores per step small: the
// collector walks every stored checkpoint and blob, and the in-memory
// saver's cost per step follows their size.
func TestMemoryStoredSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		// The ID (16), the time (24), the pointer to the rest, the one
		// version (24), the next task's ID, node and path (48), the
		// parent and run ID (32), the step and the source as a byte
		// (padded to 8). It was 216: the task's payload, the pending
		// writes, Metadata.Extra and a source string are in the rest.
		{"memCheckpoint", unsafe.Sizeof(memCheckpoint{}), 16 + 24 + 8 + 24 + 48 + 32 + 8 + 8},
		{"storedBlob", unsafe.Sizeof(storedBlob{}), 48},
		// Two blobs inline, the head, a pointer to the later chunks and
		// the key's checksum: a wide state's keys hold one or two blobs.
		{"blobList", unsafe.Sizeof(blobList{}), 136},
	} {
		if c.got > c.want {
			t.Errorf("%s is %d bytes, want at most %d", c.name, c.got, c.want)
		}
	}
}

// TestBlobListChunks fills a key's list past several chunks, in order and
// out of it (a fork's versions land between stored ones), and checks
// lookups, removal and a clone against a plain sorted set.
func TestBlobListChunks(t *testing.T) {
	bs := make(memBlobs)
	want := map[uint64]bool{}
	add := func(v uint64) {
		bs.set(memBlob{Blob: Blob{Key: "k", Version: v, Kind: Full, Data: []byte{byte(v)}}})
		want[v] = true
	}
	for v := uint64(2); v <= 400; v += 2 {
		add(v)
	}
	for _, v := range []uint64{1, 3, 65, 127, 129, 399, 401, 200} {
		add(v)
	}
	check := func(bs memBlobs) {
		t.Helper()
		if got := bs.count(); got != len(want) {
			t.Fatalf("count = %d, want %d", got, len(want))
		}
		var prev uint64
		l := bs["k"]
		for c := range l.chunks() {
			if c > 0 && len(l.chunk(c)) == 0 {
				t.Fatalf("chunk %d is empty", c)
			}
			for _, b := range l.chunk(c) {
				if b.version <= prev {
					t.Fatalf("version %d after %d", b.version, prev)
				}
				prev = b.version
			}
		}
		for v := uint64(0); v <= 402; v++ {
			b, ok := bs.get("k", v)
			if ok != want[v] || ok && (b.Version != v || b.Data[0] != byte(v)) {
				t.Fatalf("get %d = %+v, %v; want it stored: %v", v, b, ok, want[v])
			}
		}
	}
	check(bs)
	if bs["k"].chunks() < 5 {
		t.Errorf("%d chunks for %d blobs, want chunks of at most about %d", bs["k"].chunks(), len(want), blobChunk)
	}
	bs.keep(func(_ string, v uint64) bool { return v%3 == 0 || v > 300 })
	for v := range want {
		if v%3 != 0 && v <= 300 {
			delete(want, v)
		}
	}
	check(bs)
	check(bs.clone())
	add(1000)
	add(4)
	check(bs)
	bs.keep(func(string, uint64) bool { return false })
	if len(bs) != 0 {
		t.Errorf("a key with no blobs left is still listed")
	}
}

// TestMemoryInlineLayout stores checkpoints that keep their versions and
// tasks inline, in more, or split between the two, and checks that each
// reads back as it was put.
func TestMemoryInlineLayout(t *testing.T) {
	ctx := context.Background()
	one := map[string]uint64{"a": 1}
	three := map[string]uint64{"a": 1, "b": 1, "c": 1}
	task := []Task{{ID: "t1", Node: "n", Path: "p"}}
	tasks := []Task{{ID: "t1", Node: "n"}, {ID: "t2", Node: "m", Payload: json.RawMessage(`1`)}}
	for _, c := range []struct {
		name     string
		vers     map[string]uint64
		next     []Task
		waiting  map[string][]string
		deferred []string
		inline   bool
	}{
		{"nothing", nil, nil, nil, nil, true},
		{"one of each", one, task, nil, nil, true},
		{"versions only", three, task, nil, nil, false},
		{"tasks only", one, tasks, nil, nil, false},
		{"both", three, tasks, nil, nil, false},
		{"joins", one, task, map[string][]string{"j": {"a"}}, []string{"d"}, false},
		{"task without node", one, []Task{{ID: "t"}}, nil, nil, false},
	} {
		m := NewMemory()
		var blobs []Blob
		for k, v := range c.vers {
			blobs = append(blobs, Blob{Key: k, Version: v, Kind: Full, Data: []byte(`0`)})
		}
		cp := Checkpoint{ID: NewID(), Versions: c.vers, Blobs: blobs, Next: c.next, Waiting: c.waiting, Deferred: c.deferred}
		if _, err := m.Put(ctx, Ref{ThreadID: "t"}, cp, Metadata{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := m.threads["t"][""].cps[0].more == nil; got != c.inline {
			t.Errorf("%s: kept inline %v, want %v", c.name, got, c.inline)
		}
		got, err := m.Get(ctx, Ref{ThreadID: "t"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g := got.Checkpoint
		if len(g.Versions) != len(c.vers) || len(g.Next) != len(c.next) || len(g.Waiting) != len(c.waiting) || len(g.Deferred) != len(c.deferred) {
			t.Fatalf("%s: read back %+v, put %+v", c.name, g, cp)
		}
		for k, v := range c.vers {
			if g.Versions[k] != v {
				t.Errorf("%s: version of %q = %d, want %d", c.name, k, g.Versions[k], v)
			}
		}
		for i, task := range c.next {
			if g.Next[i].ID != task.ID || g.Next[i].Node != task.Node || string(g.Next[i].Payload) != string(task.Payload) {
				t.Errorf("%s: task %d = %+v, want %+v", c.name, i, g.Next[i], task)
			}
		}
	}
}

// TestMemoryCompactMetadata stores checkpoints whose metadata and tasks
// take each of the stored checkpoint's layouts — the engine's sources kept
// as a byte, another or no source, Extra, a task with and without a
// payload, one version and several, pending writes — and checks that Get,
// List, CopyThread and Prune read back exactly what was put.
func TestMemoryCompactMetadata(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	type put struct {
		cp Checkpoint
		md Metadata
	}
	var puts []put
	parent := ""
	for i, src := range []Source{SourceLoop, "custom", "", SourceFork, SourceInput, SourceResume, SourceUpdate} {
		v := uint64(i+1) << 32
		cp := Checkpoint{ID: NewID(), Versions: map[string]uint64{"k": v}, Created: time.Now(),
			Blobs: []Blob{{Key: "k", Version: v, Kind: Full, Data: json.RawMessage(`1`)}},
			Next:  []Task{{ID: fmt.Sprint("t", i), Node: "n", Path: "node:n"}}}
		md := Metadata{Source: src, Step: i - 1, Parent: parent, RunID: "r"}
		switch i {
		case 1:
			md.Extra = map[string]string{"label": "x"}
		case 2:
			cp.Next[0].Payload = json.RawMessage(`{"p":1}`)
		case 3:
			cp.Next[0].Payload = json.RawMessage{} // empty, not nil
			cp.Versions["j"] = v
			cp.Blobs = append(cp.Blobs, Blob{Key: "j", Version: v, Kind: Full, Data: json.RawMessage(`2`)})
		case 4:
			cp.Next = nil
			md.Parent = puts[1].cp.ID // a fork's parent
		}
		if _, err := m.Put(ctx, Ref{ThreadID: "t", ID: parent}, cp, md); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			w := []PendingWrite{{Key: "k", Value: json.RawMessage(`7`), Index: 0}}
			if err := m.PutWrites(ctx, Ref{ThreadID: "t", ID: cp.ID}, "t"+fmt.Sprint(i), w); err != nil {
				t.Fatal(err)
			}
		}
		puts = append(puts, put{cp, md})
		parent = cp.ID
	}
	check := func(thread string, tup *Tuple, p put, i int) {
		t.Helper()
		if !reflect.DeepEqual(tup.Metadata, p.md) {
			t.Errorf("%s checkpoint %d: metadata %+v, want %+v", thread, i, tup.Metadata, p.md)
		}
		if !reflect.DeepEqual(tup.Checkpoint.Next, p.cp.Next) || !tup.Checkpoint.Created.Equal(p.cp.Created) || !reflect.DeepEqual(tup.Checkpoint.Versions, p.cp.Versions) {
			t.Errorf("%s checkpoint %d: %+v, want %+v", thread, i, tup.Checkpoint, p.cp)
		}
		if want := i%2 == 1; (len(tup.Writes) == 1) != want {
			t.Errorf("%s checkpoint %d: writes %+v, want one: %v", thread, i, tup.Writes, want)
		}
	}
	if err := m.CopyThread(ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	for _, thread := range []string{"t", "c"} {
		for i, p := range puts {
			tup, err := m.Get(ctx, Ref{ThreadID: thread, ID: p.cp.ID})
			if err != nil {
				t.Fatal(err)
			}
			check(thread, tup, p, i)
		}
		i := len(puts)
		for tup, err := range m.List(ctx, Ref{ThreadID: thread}, ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			i--
			check(thread, tup, puts[i], i)
		}
		for tup, err := range m.List(ctx, Ref{ThreadID: thread}, ListOptions{Filter: map[string]string{"source": "custom"}}) {
			if err != nil || tup.Ref.ID != puts[1].cp.ID {
				t.Errorf("%s: List by source custom yields %v, %v; want checkpoint 1 alone", thread, tup, err)
			}
		}
	}
	if n, err := m.Prune(ctx, PruneOptions{ThreadID: "t", KeepLatest: 3}); err != nil || n != 4 {
		t.Fatalf("Prune = %d, %v; want 4, nil", n, err)
	}
	for i, p := range puts[4:] {
		tup, err := m.Get(ctx, Ref{ThreadID: "t", ID: p.cp.ID})
		if err != nil {
			t.Fatal(err)
		}
		check("t after Prune", tup, p, i+4)
	}
}

// TestChecksumStringLengths checks ChecksumString against hash/crc32 for
// parts of every length around where it switches from its table loop to
// hash/crc32, alone and after other parts.
func TestChecksumStringLengths(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	long := strings.Repeat("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0|", 4)
	for n := 0; n <= len(long); n++ {
		s := long[:n]
		if got, want := ChecksumString(0, s), crc32.Checksum([]byte(s), tab); got != want {
			t.Errorf("ChecksumString of %d bytes = %08x, want %08x", n, got, want)
		}
		if got, want := ChecksumString(0, "task", "\x00", s, "\x00"), crc32.Checksum([]byte("task\x00"+s+"\x00"), tab); got != want {
			t.Errorf("ChecksumString of parts with %d bytes = %08x, want %08x", n, got, want)
		}
	}
}
