package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
	"github.com/trellis-agents/trellis/checkpoint/redis"
	"github.com/trellis-agents/trellis/internal/testcmp"
	"github.com/trellis-agents/trellis/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSaver runs the conformance suite with a fresh key prefix per subtest.
func TestSaver(t *testing.T) {
	c := redis.Connect(t)
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c)))
	})
}

// TestLimits checks the size limit; the Savers of one test share a prefix,
// so reading data written under a larger limit is checked too.
func TestLimits(t *testing.T) {
	c := redis.Connect(t)
	prefixes := map[string]string{}
	checkpointtest.RunLimits(t, func(t *testing.T, maxBytes int) checkpoint.Saver {
		p, ok := prefixes[t.Name()]
		if !ok {
			p = redis.NewPrefix(t, c)
			prefixes[t.Name()] = p
		}
		return redis.New(c, redis.WithPrefix(p), redis.WithMaxBytes(maxBytes))
	})
}

// TestLegacyRecords reads a checkpoint stored before checksums (no "s"
// field, a blob header without a checksum, writes without a checksum
// line), and accepts a Put that carries that blob again unchanged.
func TestLegacyRecords(t *testing.T) {
	ctx := context.Background()
	s, _ := newSaver(t)
	ref := checkpoint.Ref{ThreadID: "legacy"}
	a := put(t, s, ref, "", map[string]uint64{"k": 1}, blob("k", 1, `"one"`))
	if err := s.PutWrites(ctx, a, "task", []checkpoint.PendingWrite{{Index: 0, Key: "k", Value: json.RawMessage(`"w"`)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.MakeLegacy(a, "k", 1, "task"); err != nil {
		t.Fatal(err)
	}
	tup, err := s.Get(ctx, a)
	if err != nil {
		t.Fatalf("Get of a legacy record: %v", err)
	}
	if string(tup.Checkpoint.Blobs[0].Data) != `"one"` || len(tup.Writes) != 1 || string(tup.Writes[0].Value) != `"w"` {
		t.Errorf("Get of a legacy record = %+v", tup)
	}
	b := put(t, s, ref, a.ID, map[string]uint64{"k": 1}, blob("k", 1, `"one"`))
	if _, err := s.Get(ctx, b); err != nil {
		t.Errorf("Get after carrying a legacy blob again: %v", err)
	}
}

// TestSaverSharedPrefix runs the suite against one Saver and one prefix
// shared by every subtest, as an application would use it.
func TestSaverSharedPrefix(t *testing.T) {
	c := redis.Connect(t)
	s := redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c)))
	checkpointtest.Run(t, func(*testing.T) checkpoint.Saver { return s })
}

// TestSaverCluster runs the suite on Redis Cluster when
// TRELLIS_TEST_REDIS_CLUSTER_ADDRS lists its nodes (comma-separated); CI
// does not start a cluster, so it is skipped otherwise.
func TestSaverCluster(t *testing.T) {
	addrs := os.Getenv("TRELLIS_TEST_REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		t.Skip("Redis Cluster tests need TRELLIS_TEST_REDIS_CLUSTER_ADDRS (for example 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103)")
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		testenv.Unreachable(t, "Redis Cluster at "+addrs, err)
	}
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
		return redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c)))
	})
	t.Run("Size", func(t *testing.T) {
		s := redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c)))
		put(t, s, checkpoint.Ref{ThreadID: "a"}, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
		put(t, s, checkpoint.Ref{ThreadID: "b"}, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
		if n, err := s.Size(context.Background()); err != nil || n == 0 {
			t.Errorf("Size = %d, %v", n, err)
		}
	})
}

func newSaver(t *testing.T) (*redis.Saver, *goredis.Client) {
	c := redis.Connect(t)
	return redis.New(c, redis.WithPrefix(redis.NewPrefix(t, c))), c
}

func blob(key string, version uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Full, Data: json.RawMessage(data)}
}

func delta(key string, version, base uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Delta, Base: base, Data: json.RawMessage(data)}
}

// put stores a checkpoint after parent with blobs and versions, failing the
// test on error.
func put(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, parent string, versions map[string]uint64, blobs ...checkpoint.Blob) checkpoint.Ref {
	t.Helper()
	ref.ID = parent
	cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: versions, Blobs: blobs, Created: time.Now().UTC().Truncate(time.Millisecond)}
	out, err := s.Put(context.Background(), ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Parent: parent})
	if err != nil {
		t.Fatalf("Put(%s): %v", ref, err)
	}
	return out
}

// TestTwoClientsConflict races two Savers on two connections over one
// thread: in every round both read the same latest checkpoint and then put
// at once, so exactly one wins and the other gets ErrConflict; nothing the
// winners wrote is lost.
func TestTwoClientsConflict(t *testing.T) {
	ctx := context.Background()
	s1, c1 := newSaver(t)
	c2 := redis.Connect(t)
	s2 := redis.New(c2, redis.WithPrefix(s1.Prefix()))
	ref := checkpoint.Ref{ThreadID: "shared", Namespace: "sub:1"}
	first := put(t, s1, ref, "", map[string]uint64{"n": 1}, blob("n", 1, `0`))
	_ = c1

	const rounds = 25
	savers := []*redis.Saver{s1, s2}
	var winners []string
	conflicts := 0
	for round := range rounds {
		var read, done sync.WaitGroup
		read.Add(len(savers))
		start := make(chan struct{})
		ids := make([]string, len(savers))
		errs := make([]error, len(savers))
		for w, s := range savers {
			done.Go(func() {
				tup, err := s.Get(ctx, ref)
				read.Done()
				if err != nil {
					errs[w] = fmt.Errorf("Get: %w", err)
					return
				}
				<-start
				v := tup.Checkpoint.Versions["n"] + 1
				cp := checkpoint.Checkpoint{
					ID: checkpoint.NewID(), Versions: map[string]uint64{"n": v},
					Blobs: []checkpoint.Blob{delta("n", v, v-1, fmt.Sprintf(`[%d]`, w))}, Created: time.Now(),
				}
				md := checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: round + 1, Parent: tup.Ref.ID, RunID: fmt.Sprint(w)}
				ids[w] = cp.ID
				_, errs[w] = s.Put(ctx, checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: tup.Ref.ID}, cp, md)
			})
		}
		read.Wait()
		close(start)
		done.Wait()
		won := 0
		for w, err := range errs {
			switch {
			case err == nil:
				won++
				winners = append(winners, ids[w])
			case errors.Is(err, checkpoint.ErrConflict):
				conflicts++
			default:
				t.Fatalf("round %d, writer %d: %v", round, w, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writers succeeded, want exactly 1", round, won)
		}
	}
	if conflicts != rounds {
		t.Errorf("%d conflicts, want %d", conflicts, rounds)
	}

	var got []*checkpoint.Tuple
	for tup, err := range s2.List(ctx, ref, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tup)
	}
	want := append([]string{first.ID}, winners...)
	slices.Reverse(want)
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Fatalf("List mismatch (-want +got):\n%s", diff)
	}
	for i, tup := range got {
		parent := ""
		if i+1 < len(got) {
			parent = got[i+1].Ref.ID
		}
		if tup.Metadata.Parent != parent {
			t.Errorf("checkpoint %s has parent %q, want %q", tup.Ref.ID, tup.Metadata.Parent, parent)
		}
		// The newest checkpoint rebuilds from every winner's delta.
		if v := uint64(len(got) - i); tup.Checkpoint.Versions["n"] != v || len(tup.Checkpoint.Blobs) != int(v) {
			t.Errorf("checkpoint %s has version %d and %d blobs, want %d and %d", tup.Ref.ID, tup.Checkpoint.Versions["n"], len(tup.Checkpoint.Blobs), v, v)
		}
	}
}

func ids(tuples []*checkpoint.Tuple) []string {
	out := []string{}
	for _, t := range tuples {
		out = append(out, t.Ref.ID)
	}
	return out
}

// TestCorruptRecords damages each part of stored checkpoints and checks that
// Get and List report an error naming the thread, namespace and checkpoint,
// never a zero value, and that an undamaged checkpoint still reads.
func TestCorruptRecords(t *testing.T) {
	ctx := context.Background()
	s, _ := newSaver(t)
	cases := []struct {
		name       string
		damage     func(ref checkpoint.Ref) error
		names      string // a further text the error must hold
		brokenFrom int    // the newest checkpoint List fails on: 0 for a, 1 for b
	}{
		{"checkpoint", func(ref checkpoint.Ref) error { return s.CorruptField(ref, "cp", "{not json") }, "checkpoint", 0},
		{"checksum", func(ref checkpoint.Ref) error {
			return s.Corrupt(ref, checkpointtest.Damage{Kind: checkpointtest.DamageFlipCheckpoint})
		}, "checksum", 0},
		{"legacy empty checkpoint", func(ref checkpoint.Ref) error { return s.CorruptField(ref, "cp", "{}") }, "creation time", 0},
		{"metadata", func(ref checkpoint.Ref) error { return s.CorruptField(ref, "md", "[") }, "metadata", 0},
		{"versions", func(ref checkpoint.Ref) error { return s.CorruptField(ref, "v", "3:k") }, "versions", 0},
		{"writes", func(ref checkpoint.Ref) error { return s.CorruptField(ref, "w:task-1", "{") }, `"task-1"`, 0},
		{"blob header", func(ref checkpoint.Ref) error {
			return s.CorruptBlob(ref.ThreadID, ref.Namespace, "k", 1, "X1\n1")
		}, `key "k"`, 1},
		{"empty fields", func(ref checkpoint.Ref) error {
			for _, f := range []string{"cp", "md", "v", "t"} {
				if err := s.CorruptField(ref, f, ""); err != nil {
					return err
				}
			}
			return nil
		}, "metadata", 0},
		{"missing record", s.DeleteRecord, "record", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := checkpoint.Ref{ThreadID: "corrupt-" + tc.name, Namespace: "sub:1"}
			a := put(t, s, ref, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
			b := put(t, s, ref, a.ID, map[string]uint64{"k": 2}, delta("k", 2, 1, `[2]`))
			c := put(t, s, ref, b.ID, map[string]uint64{"k": 3, "j": 1}, blob("k", 3, `3`), blob("j", 1, `1`))
			if err := tc.damage(a); err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error, id string) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s of a damaged checkpoint succeeded", what)
				}
				if errors.Is(err, checkpoint.ErrNotFound) {
					t.Errorf("%s: error %v wraps ErrNotFound", what, err)
				}
				for _, part := range []string{ref.ThreadID, ref.Namespace, id, tc.names} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("%s: error %q does not name %q", what, err, part)
					}
				}
			}
			tup, err := s.Get(ctx, a)
			if tup != nil {
				t.Errorf("Get returned a Tuple with its error: %+v", tup)
			}
			check("Get", err, a.ID)
			var listed []string
			var listErr error
			for tup, err := range s.List(ctx, ref, checkpoint.ListOptions{}) {
				if err != nil {
					listErr = err
					break
				}
				listed = append(listed, tup.Ref.ID)
			}
			// A damaged blob breaks b's chain too, which runs through it.
			newest := []string{a.ID, b.ID}[tc.brokenFrom]
			check("List", listErr, newest)
			if diff := cmp.Diff([]string{c.ID, b.ID}[:2-tc.brokenFrom], listed); diff != "" {
				t.Errorf("List before the error (-want +got):\n%s", diff)
			}
			if _, err := s.Get(ctx, c); err != nil {
				t.Errorf("Get of an undamaged checkpoint: %v", err)
			}
		})
	}
}

// TestSize checks that Size grows with what is stored and falls back when
// it is deleted.
func TestSize(t *testing.T) {
	ctx := context.Background()
	s, _ := newSaver(t)
	size := func() int64 {
		t.Helper()
		n, err := s.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := size(); n != 0 {
		t.Errorf("Size of an empty Saver = %d, want 0", n)
	}
	ref := checkpoint.Ref{ThreadID: "size"}
	a := put(t, s, ref, "", map[string]uint64{"msgs": 1}, blob("msgs", 1, `["`+strings.Repeat("x", 1000)+`"]`))
	one := size()
	if one <= 1000 {
		t.Errorf("Size after one checkpoint with a 1000-byte blob = %d", one)
	}
	parent := a.ID
	for v := uint64(2); v <= 20; v++ {
		parent = put(t, s, ref, parent, map[string]uint64{"msgs": v}, delta("msgs", v, v-1, `["`+strings.Repeat("y", 500)+`"]`)).ID
	}
	many := size()
	if many < one+19*500 {
		t.Errorf("Size after 19 more checkpoints with 500-byte deltas = %d, want at least %d", many, one+19*500)
	}
	other := checkpoint.Ref{ThreadID: "size-other", Namespace: "sub"}
	put(t, s, other, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
	two := size()
	if two <= many {
		t.Errorf("Size after a second thread = %d, want more than %d", two, many)
	}
	if n, err := s.Prune(ctx, checkpoint.PruneOptions{ThreadID: ref.ThreadID, KeepLatest: 1}); err != nil || n != 19 {
		t.Fatalf("Prune = %d, %v; want 19", n, err)
	}
	if n := size(); n >= two {
		t.Errorf("Size after pruning = %d, want less than %d", n, two)
	}
	for _, th := range []string{ref.ThreadID, other.ThreadID} {
		if err := s.DeleteThread(ctx, th); err != nil {
			t.Fatal(err)
		}
	}
	if n := size(); n != 0 {
		t.Errorf("Size after deleting every thread = %d, want 0", n)
	}
}

// TestCleanupOnlyOwnKeys checks that DeleteThread removes exactly its
// thread's keys and that the tests' prefix cleanup removes exactly the
// prefix's keys.
func TestCleanupOnlyOwnKeys(t *testing.T) {
	ctx := context.Background()
	s, c := newSaver(t)
	keep := checkpoint.Ref{ThreadID: "keep"}
	drop := checkpoint.Ref{ThreadID: "drop", Namespace: "sub"}
	put(t, s, keep, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
	d := put(t, s, drop, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
	if err := s.PutWrites(ctx, d, "t", []checkpoint.PendingWrite{{Key: "k", Value: json.RawMessage(`2`)}}); err != nil {
		t.Fatal(err)
	}
	scan := func(pattern string) []string {
		t.Helper()
		keys, err := redis.ScanPrefix(ctx, c, pattern)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	keepKeys := scan(s.ThreadKeyPattern(keep.ThreadID))
	if len(keepKeys) == 0 || len(scan(s.ThreadKeyPattern(drop.ThreadID))) == 0 {
		t.Fatal("no keys stored")
	}
	if err := s.DeleteThread(ctx, drop.ThreadID); err != nil {
		t.Fatal(err)
	}
	if left := scan(s.ThreadKeyPattern(drop.ThreadID)); len(left) != 0 {
		t.Errorf("keys left after DeleteThread: %q", left)
	}
	if diff := cmp.Diff(keepKeys, scan(s.ThreadKeyPattern(keep.ThreadID))); diff != "" {
		t.Errorf("another thread's keys changed (-before +after):\n%s", diff)
	}
	if members, err := c.SMembers(ctx, s.IndexKey()).Result(); err != nil || !slices.Equal(members, []string{keep.ThreadID}) {
		t.Errorf("thread index = %q, %v; want only %q", members, err, keep.ThreadID)
	}

	// A neighbour whose name starts like the prefix, without its final ':'.
	neighbour := strings.TrimSuffix(s.Prefix(), ":") + "x:key"
	if err := c.Set(ctx, neighbour, "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	defer c.Del(ctx, neighbour)
	n, err := redis.DeletePrefix(ctx, c, s.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	if n != len(keepKeys)+1 { // the thread's keys and the index
		t.Errorf("cleanup deleted %d keys, want %d", n, len(keepKeys)+1)
	}
	if left := scan(redis.GlobEscape(s.Prefix()) + "*"); len(left) != 0 {
		t.Errorf("keys left under the prefix after cleanup: %q", left)
	}
	if v, err := c.Get(ctx, neighbour).Result(); err != nil || v != "v" {
		t.Errorf("cleanup touched the neighbouring key: %q, %v", v, err)
	}
}

// TestAwkwardNames stores threads, namespaces and state keys with the
// characters the key layout escapes or splits on, and checks they stay
// apart and that all of a thread's keys share its Cluster hash tag.
func TestAwkwardNames(t *testing.T) {
	ctx := context.Background()
	s, c := newSaver(t)
	threads := []string{"a}b", "a%7Db", "{x}", "x", "a:b", "100%"}
	namespaces := []string{"", "p:q", "p%3Aq", "p", "p:q:"}
	keys := []string{"k", "k\x001", "line\nbreak", "12:colon", "ü", ""}
	type at struct{ thread, ns string }
	stored := map[at]checkpoint.Ref{}
	for i, th := range threads {
		for j, ns := range namespaces {
			versions := map[string]uint64{}
			var blobs []checkpoint.Blob
			for n, k := range keys {
				if k == "" {
					continue // an empty key cannot have a blob
				}
				v := uint64(100*i + 10*j + n + 1)
				versions[k] = v
				blobs = append(blobs, blob(k, v, fmt.Sprintf(`%q`, th+"|"+ns+"|"+k)))
			}
			stored[at{th, ns}] = put(t, s, checkpoint.Ref{ThreadID: th, Namespace: ns}, "", versions, blobs...)
		}
	}
	for where, ref := range stored {
		tup, err := s.Get(ctx, checkpoint.Ref{ThreadID: where.thread, Namespace: where.ns})
		if err != nil {
			t.Fatalf("Get(%s): %v", ref, err)
		}
		if tup.Ref != ref {
			t.Errorf("Get latest of %s = %s", ref, tup.Ref)
		}
		for _, b := range tup.Checkpoint.Blobs {
			if want := fmt.Sprintf(`%q`, where.thread+"|"+where.ns+"|"+b.Key); string(b.Data) != want {
				t.Errorf("%s: blob %q = %s, want %s", ref, b.Key, b.Data, want)
			}
		}
		if len(tup.Checkpoint.Blobs) != len(keys)-1 {
			t.Errorf("%s: %d blobs, want %d", ref, len(tup.Checkpoint.Blobs), len(keys)-1)
		}
	}
	all, err := redis.ScanPrefix(ctx, c, redis.GlobEscape(s.Prefix())+"*")
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, key := range all {
		if key == s.IndexKey() {
			continue
		}
		open := strings.IndexByte(key, '{')
		end := strings.IndexByte(key[open+1:], '}')
		if open < 0 || end < 0 {
			t.Errorf("key %q has no hash tag", key)
			continue
		}
		tags[key[open+1:open+1+end]] = true
	}
	if len(tags) != len(threads) {
		t.Errorf("keys have %d hash tags %v, want one per thread (%d)", len(tags), tags, len(threads))
	}
}

// TestListPagesMatchMemory lists a namespace longer than a List page with
// many options and compares every result with checkpoint.Memory's.
func TestListPagesMatchMemory(t *testing.T) {
	ctx := context.Background()
	s, _ := newSaver(t)
	mem := checkpoint.NewMemory()
	ref := checkpoint.Ref{ThreadID: "pages", Namespace: "ns"}
	parent := ""
	var all []string
	for i := range 75 {
		v := uint64(i + 1)
		b := delta("msgs", v, v-1, fmt.Sprintf(`[%d]`, i))
		if i%10 == 0 {
			b = blob("msgs", v, fmt.Sprintf(`[%d]`, i))
		}
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"msgs": v}, Blobs: []checkpoint.Blob{b}, Created: time.Now().UTC().Truncate(time.Millisecond)}
		md := checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: i, Parent: parent, Extra: map[string]string{"mod3": fmt.Sprint(i % 3)}}
		for _, sv := range []checkpoint.Saver{s, mem} {
			if _, err := sv.Put(ctx, checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: parent}, cp, md); err != nil {
				t.Fatal(err)
			}
		}
		parent = cp.ID
		all = append(all, cp.ID)
	}
	list := func(sv checkpoint.Saver, opts checkpoint.ListOptions) []*checkpoint.Tuple {
		t.Helper()
		var out []*checkpoint.Tuple
		for tup, err := range sv.List(ctx, ref, opts) {
			if err != nil {
				t.Fatalf("List(%+v): %v", opts, err)
			}
			out = append(out, tup)
		}
		return out
	}
	for _, opts := range []checkpoint.ListOptions{
		{},
		{Limit: 31}, {Limit: 32}, {Limit: 33}, {Limit: 70},
		{Before: all[70]}, {Before: all[40], Limit: 35},
		{Filter: map[string]string{"mod3": "1"}},
		{Filter: map[string]string{"mod3": "2"}, Limit: 20},
		{Filter: map[string]string{"mod3": "0"}, Before: all[50], Limit: 3},
		{Filter: map[string]string{"step": "3"}},
	} {
		if diff := cmp.Diff(list(mem, opts), list(s, opts), testcmp.Options); diff != "" {
			t.Errorf("List(%+v) differs from Memory (-memory +redis):\n%s", opts, diff)
		}
	}
}

// TestExportIndex checks what the thread index adds to checkpoint.Exporter:
// Threads pages in byte order over an index Redis keeps unordered, skips
// index entries of threads without checkpoints (a deleted run's, a failed
// first Put's) and reaches past a page made only of such entries; thread
// IDs and namespaces with the characters keys escape come back as given.
func TestExportIndex(t *testing.T) {
	ctx := context.Background()
	s, c := newSaver(t)
	var want []string
	for _, th := range []string{"e", "b%{x}", "a", "d", "c"} {
		put(t, s, checkpoint.Ref{ThreadID: th, Namespace: "sub:1%"}, "", map[string]uint64{"k": 1}, blob("k", 1, `1`))
		want = append(want, th)
	}
	slices.Sort(want)
	// Stale entries: two before "a" (a whole page of them at limit 2), one
	// between "c" and "d".
	if err := c.SAdd(ctx, s.IndexKey(), "0stale", "1stale", "c2stale").Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for after := ""; ; {
		page, err := s.Threads(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	if !slices.Equal(got, want) {
		t.Errorf("Threads paged %q, want %q", got, want)
	}
	if nss, err := s.Namespaces(ctx, "b%{x}"); err != nil || !slices.Equal(nss, []string{"sub:1%"}) {
		t.Errorf("Namespaces = %q, %v; want [sub:1%%]", nss, err)
	}
	if ids, err := s.CheckpointIDs(ctx, checkpoint.Ref{ThreadID: "b%{x}", Namespace: "sub:1%"}, 5); err != nil || len(ids) != 1 {
		t.Errorf("CheckpointIDs = %q, %v; want one", ids, err)
	}
	if _, err := s.CheckpointIDs(ctx, checkpoint.Ref{ThreadID: "a"}, 0); err == nil {
		t.Error("CheckpointIDs with limit 0 is not an error")
	}
}
