package redis

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
)

func TestVersionsRoundTrip(t *testing.T) {
	for _, vs := range []map[string]uint64{
		nil,
		{"k": 1},
		{"": 0, "a:b": 18446744073709551615, "nul\x00in": 7, "line\nbreak": 12, "3:x": 3, "ü": 9},
	} {
		got, err := decodeVersions(encodeVersions(vs))
		if err != nil {
			t.Fatalf("decodeVersions(encodeVersions(%v)): %v", vs, err)
		}
		if len(vs) == 0 && len(got) == 0 {
			continue
		}
		if diff := cmp.Diff(vs, got); diff != "" {
			t.Errorf("round trip mismatch (-want +got):\n%s", diff)
		}
	}
	for _, bad := range []string{"1:k", "x:k1\n", "2:k1\n", "1:k01\n", "1:k\n", "1:k1\n1:k2\n", "9:k1\n", ":k1\n"} {
		if _, err := decodeVersions(bad); err == nil {
			t.Errorf("decodeVersions(%q) succeeded", bad)
		}
	}
}

func TestBlobRoundTrip(t *testing.T) {
	for _, b := range []checkpoint.Blob{
		{Key: "k", Version: 1, Kind: checkpoint.Full, Data: json.RawMessage(`{"a":1}`)},
		{Key: "k", Version: 9, Kind: checkpoint.Delta, Base: 8, Data: json.RawMessage("[\"x\\ny\"]")},
		{Key: "k", Version: 3, Kind: checkpoint.Full, Base: 2},
	} {
		got, err := decodeBlob(b.Key, b.Version, string(encodeBlob(b)))
		if err != nil || !got.Equal(b) {
			t.Errorf("decodeBlob(encodeBlob(%+v)) = %+v, %v", b, got, err)
		}
	}
	for _, bad := range []string{"", "F", "F\n", "X1\n", "D01\n", "D-1\n"} {
		if _, err := decodeBlob("k", 1, bad); err == nil {
			t.Errorf("decodeBlob(%q) succeeded", bad)
		}
	}
}

func TestTimeKeyOrder(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		a, b := timeKey(times[i-1]), timeKey(times[i])
		if !(a < b) || len(a) != len(b) {
			t.Errorf("timeKey(%v) = %s does not sort before timeKey(%v) = %s", times[i-1], a, times[i], b)
		}
	}
}

// TestScriptFallback runs scripts the server has never seen (their source
// is unique to this run) through the helpers, which must fall back from
// EVALSHA to EVAL without flushing the shared server's script cache.
func TestScriptFallback(t *testing.T) {
	ctx := context.Background()
	c := Connect(t)
	prefix := NewPrefix(t, c)
	s := New(c, WithPrefix(prefix))
	token := rand.Text()

	sc := goredis.NewScript("-- " + token + "\nreturn redis.call('INCR', KEYS[1])")
	key := s.threadBase("fallback") + "counter"
	for want := int64(1); want <= 2; want++ {
		res, err := s.runIndexed(ctx, sc, []string{key}, nil, true, func(c goredis.Cmdable) *goredis.IntCmd {
			return c.SAdd(ctx, s.indexKey(), "fallback")
		})
		if err != nil || res != want {
			t.Fatalf("runIndexed = %v, %v; want %d", res, err, want)
		}
	}
	if ok, err := c.SIsMember(ctx, s.indexKey(), "fallback").Result(); err != nil || !ok {
		t.Errorf("the index command did not run: %v, %v", ok, err)
	}

	each := goredis.NewScript("-- " + token + " each\nreturn #ARGV[1] + tonumber(ARGV[2])")
	threads := []string{"a", "bb", "ccc"}
	var want int64
	for _, th := range threads {
		want += int64(len(s.threadBase(th))) + 1
	}
	for range 2 {
		n, err := s.sumEach(ctx, each, "test", threads, []any{1})
		if err != nil || n != want {
			t.Fatalf("sumEach = %d, %v; want %d", n, err, want)
		}
	}
}

// TestPruneClock prunes by age against the Saver's clock rather than the
// checkpoints' Created times, as checkpoint.Memory's test does.
func TestPruneClock(t *testing.T) {
	ctx := context.Background()
	c := Connect(t)
	s := New(c, WithPrefix(NewPrefix(t, c)))
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ref := checkpoint.Ref{ThreadID: "clock"}
	var ids []string
	parent := ""
	for i := range 4 {
		cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"a": uint64(i + 1)},
			Blobs:   []checkpoint.Blob{{Key: "a", Version: uint64(i + 1), Kind: checkpoint.Full, Data: json.RawMessage(`1`)}},
			Created: t0.Add(time.Duration(i) * time.Hour)}
		if _, err := s.Put(ctx, checkpoint.Ref{ThreadID: ref.ThreadID, ID: parent}, cp, checkpoint.Metadata{Step: i, Parent: parent}); err != nil {
			t.Fatal(err)
		}
		parent = cp.ID
		ids = append(ids, cp.ID)
	}
	s.SetClock(func() time.Time { return t0.Add(25*time.Hour + 30*time.Minute) })
	n, err := s.Prune(ctx, checkpoint.PruneOptions{ThreadID: ref.ThreadID, OlderThan: 24 * time.Hour})
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
	var got []string
	for tup, err := range s.List(ctx, ref, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tup.Ref.ID)
	}
	want := slices.Clone(ids[2:])
	slices.Reverse(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List after Prune (-want +got):\n%s", diff)
	}
	fields, err := c.HKeys(ctx, s.keys(ref.ThreadID, "").blobs).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(fields)
	if diff := cmp.Diff([]string{blobField("a", 3), blobField("a", 4)}, fields); diff != "" {
		t.Errorf("blobs after Prune (-want +got):\n%s", diff)
	}
}
