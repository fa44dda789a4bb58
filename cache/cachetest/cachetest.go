// Package cachetest is the conformance suite of cache.Cache: every
// implementation runs it from its own tests with Run, so that a graph's
// cached nodes behave the same on each backend.
package cachetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/cache"
)

// Run runs the conformance suite as subtests of t. newCache is called once
// per subtest and must return an empty cache that no other subtest uses
// (for a shared server, a fresh key prefix); it should register with
// t.Cleanup whatever has to be released.
//
// The TTL cases sleep a few hundred milliseconds; no case measures speed.
func Run(t *testing.T, newCache func(t *testing.T) cache.Cache) {
	cases := []struct {
		name string
		fn   func(t *testing.T, c cache.Cache)
	}{
		{"GetMissing", testGetMissing},
		{"SetGetReplace", testSetGetReplace},
		{"EmptyValue", testEmptyValue},
		{"NamespacesIsolated", testNamespacesIsolated},
		{"ClearNamespaces", testClearNamespaces},
		{"ClearAll", testClearAll},
		{"OddNames", testOddNames},
		{"TTL", testTTL},
		{"ReplaceChangesTTL", testReplaceChangesTTL},
		{"Copies", testCopies},
		{"LargeValues", testLargeValues},
		{"InvalidArguments", testInvalidArguments},
		{"CanceledContext", testCanceledContext},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newCache(t)) })
	}
}

var ctx = context.Background()

func set(t *testing.T, c cache.Cache, ns, key, value string, ttl time.Duration) {
	t.Helper()
	if err := c.Set(ctx, ns, key, []byte(value), ttl); err != nil {
		t.Fatalf("Set(%q, %q): %v", ns, key, err)
	}
}

// want checks that ns/key holds value.
func want(t *testing.T, c cache.Cache, ns, key, value string) {
	t.Helper()
	got, ok, err := c.Get(ctx, ns, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, key, err)
	}
	if !ok {
		t.Fatalf("Get(%q, %q): not found, want %q", ns, key, value)
	}
	if string(got) != value {
		t.Fatalf("Get(%q, %q) = %q, want %q", ns, key, got, value)
	}
}

// absent checks that ns/key holds nothing.
func absent(t *testing.T, c cache.Cache, ns, key string) {
	t.Helper()
	got, ok, err := c.Get(ctx, ns, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ns, key, err)
	}
	if ok || got != nil {
		t.Fatalf("Get(%q, %q) = %q, %v; want nothing", ns, key, got, ok)
	}
}

func testGetMissing(t *testing.T, c cache.Cache) {
	absent(t, c, "node", "k")
	set(t, c, "node", "k", "v", 0)
	absent(t, c, "node", "other")
	absent(t, c, "other", "k")
}

func testSetGetReplace(t *testing.T, c cache.Cache) {
	set(t, c, "node", "k", `{"answer":1}`, 0)
	want(t, c, "node", "k", `{"answer":1}`)
	set(t, c, "node", "k", `{"answer":2}`, 0)
	want(t, c, "node", "k", `{"answer":2}`)
	set(t, c, "node", "k2", `x`, time.Hour)
	want(t, c, "node", "k2", `x`)
	want(t, c, "node", "k", `{"answer":2}`)
}

func testEmptyValue(t *testing.T, c cache.Cache) {
	for _, v := range [][]byte{nil, {}} {
		if err := c.Set(ctx, "node", "k", v, 0); err != nil {
			t.Fatalf("Set(%#v): %v", v, err)
		}
		got, ok, err := c.Get(ctx, "node", "k")
		if err != nil || !ok {
			t.Fatalf("Get after Set(%#v) = %v, %v; want a hit", v, ok, err)
		}
		if got == nil || len(got) != 0 {
			t.Fatalf("Get after Set(%#v) = %#v, want an empty non-nil slice", v, got)
		}
	}
}

func testNamespacesIsolated(t *testing.T, c cache.Cache) {
	set(t, c, "a", "k", "in a", 0)
	set(t, c, "b", "k", "in b", 0)
	want(t, c, "a", "k", "in a")
	want(t, c, "b", "k", "in b")
	// Joining namespace and key must not make two entries collide.
	set(t, c, "x", "y:z", "1", 0)
	set(t, c, "x:y", "z", "2", 0)
	set(t, c, "x/y", "z", "3", 0)
	set(t, c, "x", "y/z", "4", 0)
	want(t, c, "x", "y:z", "1")
	want(t, c, "x:y", "z", "2")
	want(t, c, "x/y", "z", "3")
	want(t, c, "x", "y/z", "4")
}

func testClearNamespaces(t *testing.T, c cache.Cache) {
	for _, ns := range []string{"a", "b", "c", "ab", "a:b"} {
		set(t, c, ns, "k1", ns+"1", 0)
		set(t, c, ns, "k2", ns+"2", time.Hour)
	}
	if err := c.Clear(ctx, "a", "c", "never-used"); err != nil {
		t.Fatalf("Clear(a, c, never-used): %v", err)
	}
	for _, ns := range []string{"a", "c"} {
		absent(t, c, ns, "k1")
		absent(t, c, ns, "k2")
	}
	// A namespace that starts with a cleared one is another namespace.
	for _, ns := range []string{"b", "ab", "a:b"} {
		want(t, c, ns, "k1", ns+"1")
		want(t, c, ns, "k2", ns+"2")
	}
	// The cleared namespaces are usable again.
	set(t, c, "a", "k1", "again", 0)
	want(t, c, "a", "k1", "again")
}

func testClearAll(t *testing.T, c cache.Cache) {
	for i := range 5 {
		set(t, c, fmt.Sprintf("ns%d", i), "k", "v", 0)
		set(t, c, fmt.Sprintf("ns%d", i), "t", "v", time.Hour)
	}
	if err := c.Clear(ctx); err != nil {
		t.Fatalf("Clear(): %v", err)
	}
	for i := range 5 {
		absent(t, c, fmt.Sprintf("ns%d", i), "k")
		absent(t, c, fmt.Sprintf("ns%d", i), "t")
	}
	if err := c.Clear(ctx); err != nil {
		t.Fatalf("Clear() on an empty cache: %v", err)
	}
	set(t, c, "ns0", "k", "after", 0)
	want(t, c, "ns0", "k", "after")
}

// testOddNames uses names holding characters that backends treat
// specially (glob patterns, Redis hash tags, escapes, separators, UTF-8).
func testOddNames(t *testing.T, c cache.Cache) {
	names := []string{"*", "a*", "a?", "[a]", `\`, "{x}", "}{", "%", "%7B", ":", "a b", "é✓", "'; DROP TABLE x; --", "a\x00b"}
	for i, ns := range names {
		for j, key := range names {
			set(t, c, ns, key, fmt.Sprint(i, ",", j), 0)
		}
	}
	set(t, c, "ab", "k", "plain", 0)
	for i, ns := range names {
		for j, key := range names {
			want(t, c, ns, key, fmt.Sprint(i, ",", j))
		}
	}
	// Clearing a namespace that looks like a pattern clears only itself.
	cleared := map[string]bool{"a*": true, "*": true, "[a]": true, `\`: true, "{x}": true}
	if err := c.Clear(ctx, "a*", "*", "[a]", `\`, "{x}"); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	want(t, c, "ab", "k", "plain")
	for i, ns := range names {
		for j, key := range names {
			if cleared[ns] {
				absent(t, c, ns, key)
			} else {
				want(t, c, ns, key, fmt.Sprint(i, ",", j))
			}
		}
	}
}

const shortTTL = 150 * time.Millisecond

func testTTL(t *testing.T, c cache.Cache) {
	set(t, c, "node", "short", "s", shortTTL)
	set(t, c, "node", "long", "l", time.Hour)
	set(t, c, "node", "never", "n", 0)
	want(t, c, "node", "short", "s")
	time.Sleep(2 * shortTTL)
	absent(t, c, "node", "short")
	want(t, c, "node", "long", "l")
	want(t, c, "node", "never", "n")
	// An expired entry can be set again.
	set(t, c, "node", "short", "s2", 0)
	want(t, c, "node", "short", "s2")
}

func testReplaceChangesTTL(t *testing.T, c cache.Cache) {
	// Replacing an expiring entry with ttl 0 makes it permanent ...
	set(t, c, "node", "a", "1", shortTTL)
	set(t, c, "node", "a", "2", 0)
	// ... and replacing a permanent one with a ttl makes it expire.
	set(t, c, "node", "b", "1", 0)
	set(t, c, "node", "b", "2", shortTTL)
	time.Sleep(2 * shortTTL)
	want(t, c, "node", "a", "2")
	absent(t, c, "node", "b")
}

func testCopies(t *testing.T, c cache.Cache) {
	in := []byte("original")
	if err := c.Set(ctx, "node", "k", in, 0); err != nil {
		t.Fatal(err)
	}
	copy(in, "XXXXXXXX")
	want(t, c, "node", "k", "original")
	got, _, err := c.Get(ctx, "node", "k")
	if err != nil {
		t.Fatal(err)
	}
	copy(got, "YYYYYYYY")
	want(t, c, "node", "k", "original")
	// Two reads do not share memory either.
	a, _, _ := c.Get(ctx, "node", "k")
	b, _, _ := c.Get(ctx, "node", "k")
	a[0] = 'Z'
	if b[0] != 'o' {
		t.Fatalf("two Gets returned the same memory: changing one changed the other to %q", b)
	}
}

func testLargeValues(t *testing.T, c cache.Cache) {
	big := make([]byte, cache.MaxValueBytes)
	for i := range big {
		big[i] = byte(i*7 + i>>11) // every byte value, not a repeating page
	}
	if err := c.Set(ctx, "node", "max", big, 0); err != nil {
		t.Fatalf("Set of a value of exactly MaxValueBytes: %v", err)
	}
	got, ok, err := c.Get(ctx, "node", "max")
	if err != nil || !ok {
		t.Fatalf("Get of the largest value = %v, %v", ok, err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("the largest value came back changed (%d bytes, want %d)", len(got), len(big))
	}
	set(t, c, "node", "over", "before", 0)
	err = c.Set(ctx, "node", "over", append(big, 0), 0)
	if !errors.Is(err, cache.ErrTooLarge) {
		t.Fatalf("Set of MaxValueBytes+1 bytes = %v, want an error wrapping ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(cache.MaxValueBytes)) {
		t.Errorf("the error %q does not name the limit", err)
	}
	want(t, c, "node", "over", "before")
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	if err := c.Set(ctx, "node", "bin", binary, 0); err != nil {
		t.Fatal(err)
	}
	want(t, c, "node", "bin", string(binary))
}

func testInvalidArguments(t *testing.T, c cache.Cache) {
	long := strings.Repeat("k", cache.MaxKeyBytes+1)
	ok := strings.Repeat("k", cache.MaxKeyBytes)
	set(t, c, ok, ok, "longest names", 0)
	want(t, c, ok, ok, "longest names")
	for _, a := range []struct{ ns, key string }{{"", "k"}, {"node", ""}, {"", ""}, {long, "k"}, {"node", long}} {
		if err := c.Set(ctx, a.ns, a.key, []byte("v"), 0); !errors.Is(err, cache.ErrInvalid) {
			t.Errorf("Set(%.20q, %.20q) = %v, want an error wrapping ErrInvalid", a.ns, a.key, err)
		}
		if v, hit, err := c.Get(ctx, a.ns, a.key); !errors.Is(err, cache.ErrInvalid) || hit || v != nil {
			t.Errorf("Get(%.20q, %.20q) = %q, %v, %v; want an error wrapping ErrInvalid", a.ns, a.key, v, hit, err)
		}
	}
	if err := c.Set(ctx, "node", "k", []byte("v"), -time.Second); !errors.Is(err, cache.ErrInvalid) {
		t.Errorf("Set with a negative ttl = %v, want an error wrapping ErrInvalid", err)
	}
	absent(t, c, "node", "k")
	set(t, c, "node", "k", "kept", 0)
	for _, nss := range [][]string{{""}, {"node", ""}, {long}} {
		if err := c.Clear(ctx, nss...); !errors.Is(err, cache.ErrInvalid) {
			t.Errorf("Clear(%.20q) = %v, want an error wrapping ErrInvalid", nss, err)
		}
	}
	// A refused Clear removes nothing, not even the valid namespaces.
	want(t, c, "node", "k", "kept")
}

func testCanceledContext(t *testing.T, c cache.Cache) {
	set(t, c, "node", "k", "v", 0)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Set(canceled, "node", "k", []byte("changed"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a canceled context = %v, want context.Canceled", err)
	}
	if err := c.Set(canceled, "node", "new", []byte("v"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a canceled context = %v, want context.Canceled", err)
	}
	if v, ok, err := c.Get(canceled, "node", "k"); !errors.Is(err, context.Canceled) || ok || v != nil {
		t.Errorf("Get with a canceled context = %q, %v, %v; want context.Canceled", v, ok, err)
	}
	if err := c.Clear(canceled, "node"); !errors.Is(err, context.Canceled) {
		t.Errorf("Clear(node) with a canceled context = %v, want context.Canceled", err)
	}
	if err := c.Clear(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Clear() with a canceled context = %v, want context.Canceled", err)
	}
	want(t, c, "node", "k", "v")
	absent(t, c, "node", "new")
}

func testConcurrent(t *testing.T, c cache.Cache) {
	const workers, rounds = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("worker%d", w)
			for i := range rounds {
				v := fmt.Appendf(nil, "%d/%d", w, i)
				if err := c.Set(ctx, own, "k", v, 0); err != nil {
					errs <- err
					return
				}
				// Every worker writes and reads the shared entry too.
				if err := c.Set(ctx, "shared", "k", v, time.Hour); err != nil {
					errs <- err
					return
				}
				got, ok, err := c.Get(ctx, own, "k")
				if err != nil || !ok || !bytes.Equal(got, v) {
					errs <- fmt.Errorf("worker %d read its own entry as %q, %v, %v; want %q", w, got, ok, err, v)
					return
				}
				if _, _, err := c.Get(ctx, "shared", "k"); err != nil {
					errs <- err
					return
				}
				if i%10 == 9 {
					if err := c.Clear(ctx, own+"-scratch"); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range workers {
		want(t, c, fmt.Sprintf("worker%d", w), "k", fmt.Sprintf("%d/%d", w, rounds-1))
	}
	got, ok, err := c.Get(ctx, "shared", "k")
	if err != nil || !ok || !bytes.Contains(got, []byte("/")) {
		t.Fatalf("shared entry = %q, %v, %v; want one worker's last value", got, ok, err)
	}
}
