package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/testcmp"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/store"
)

// Run runs the conformance suite against the Stores newStore returns, one
// subtest per behaviour. newStore is called once per subtest; see the
// package documentation for what it may share.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"PutGet", testPutGet},
		{"Validation", testValidation},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"TTL", testTTL},
		{"SearchPrefix", testSearchPrefix},
		{"SearchFilter", testSearchFilter},
		{"SearchPaging", testSearchPaging},
		{"ListNamespaces", testListNamespaces},
		{"ListNamespacesPaging", testListNamespacesPaging},
		{"DeepCopy", testDeepCopy},
		{"Generic", testGeneric},
		{"Concurrent", testConcurrent},
		{"CanceledContext", testCanceledContext},
		{"Export", testExport},
		{"SearchTextWithoutIndex", testSearchTextWithoutIndex},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// cmpOpts are the shared backend comparison options.
var cmpOpts = testcmp.Options

// base returns a namespace no other subtest or run uses.
func base(t *testing.T) []string {
	return []string{"storetest", t.Name(), uuid.NewString()}
}

// ns returns base followed by elems, in a new slice.
func ns(base []string, elems ...string) []string {
	return append(slices.Clone(base), elems...)
}

func put(t *testing.T, s store.Store, namespace []string, key, value string) {
	t.Helper()
	putTTL(t, s, namespace, key, value, 0)
}

func putTTL(t *testing.T, s store.Store, namespace []string, key, value string, ttl time.Duration) {
	t.Helper()
	if err := s.Put(context.Background(), namespace, key, json.RawMessage(value), store.PutOptions{TTL: ttl}); err != nil {
		t.Fatalf("Put(%q, %q): %v", namespace, key, err)
	}
}

func get(t *testing.T, s store.Store, namespace []string, key string) *store.Item {
	t.Helper()
	it, err := s.Get(context.Background(), namespace, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", namespace, key, err)
	}
	if it == nil {
		t.Fatalf("Get(%q, %q) returned a nil Item and no error", namespace, key)
	}
	return it
}

func checkNotFound(t *testing.T, s store.Store, namespace []string, key string) {
	t.Helper()
	it, err := s.Get(context.Background(), namespace, key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q, %q) = %+v, %v; want ErrNotFound", namespace, key, it, err)
	}
}

// search runs Search and returns "namespace/key" of each item, failing the
// test on error.
func search(t *testing.T, s store.Store, prefix []string, q store.Query) []string {
	t.Helper()
	items, err := s.Search(context.Background(), prefix, q)
	if err != nil {
		t.Fatalf("Search(%q, %+v): %v", prefix, q, err)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, name(it.Namespace, it.Key))
	}
	return out
}

func name(namespace []string, key string) string {
	return fmt.Sprintf("%q/%s", namespace, key)
}

func listNamespaces(t *testing.T, s store.Store, q store.NamespaceQuery) [][]string {
	t.Helper()
	out, err := s.ListNamespaces(context.Background(), q)
	if err != nil {
		t.Fatalf("ListNamespaces(%+v): %v", q, err)
	}
	return out
}

func check[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

func testPutGet(t *testing.T, s store.Store) {
	b := base(t)
	before := time.Now().Add(-time.Second)
	put(t, s, ns(b, "users", "u1"), "profile", `{"name": "Ada", "langs": ["go", "sql"]}`)
	put(t, s, ns(b, "users", "u2"), "profile", `{"name": "Bob"}`)
	put(t, s, ns(b, "users", "u1"), "scalar", `42`)

	it := get(t, s, ns(b, "users", "u1"), "profile")
	check(t, "Get item", &store.Item{
		Namespace: ns(b, "users", "u1"), Key: "profile",
		Value:   json.RawMessage(`{"langs":["go","sql"],"name":"Ada"}`),
		Created: it.Created, Updated: it.Updated,
	}, it)
	if it.Created.Before(before) || it.Updated.Before(it.Created) || !it.Expires.IsZero() {
		t.Errorf("new item has Created %v, Updated %v, Expires %v; want Created now, Updated not before it, no Expires", it.Created, it.Updated, it.Expires)
	}
	check(t, "other namespace", json.RawMessage(`{"name":"Bob"}`), get(t, s, ns(b, "users", "u2"), "profile").Value)
	check(t, "scalar value", json.RawMessage(`42`), get(t, s, ns(b, "users", "u1"), "scalar").Value)

	checkNotFound(t, s, ns(b, "users", "u1"), "missing")
	checkNotFound(t, s, ns(b, "users", "u3"), "profile")
	checkNotFound(t, s, ns(b, "users"), "profile")
	checkNotFound(t, s, ns(b, "users", "u1", "deeper"), "profile")
}

func testValidation(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	good := ns(b, "x")
	bad := [][]string{nil, {}, {""}, ns(b, ""), {"", "a"}}
	for _, n := range bad {
		if err := s.Put(ctx, n, "k", json.RawMessage(`1`), store.PutOptions{}); err == nil {
			t.Errorf("Put in namespace %q succeeded, want an error", n)
		}
		if _, err := s.Get(ctx, n, "k"); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get in namespace %q: error = %v, want a validation error", n, err)
		}
		if err := s.Delete(ctx, n, "k"); err == nil {
			t.Errorf("Delete in namespace %q succeeded, want an error", n)
		}
	}
	for _, p := range [][]string{{""}, ns(b, ""), {"", "a"}} {
		if _, err := s.Search(ctx, p, store.Query{}); err == nil {
			t.Errorf("Search with prefix %q succeeded, want an error", p)
		}
		if _, err := s.ListNamespaces(ctx, store.NamespaceQuery{Prefix: p}); err == nil {
			t.Errorf("ListNamespaces with prefix %q succeeded, want an error", p)
		}
	}
	for _, v := range []string{``, `{`, `{"a":1}x`, `nil`, `'a'`, `{"a":1}{"b":2}`} {
		err := s.Put(ctx, good, "k", json.RawMessage(v), store.PutOptions{})
		if err == nil {
			t.Errorf("Put of invalid JSON %q succeeded, want an error", v)
		} else if !strings.Contains(err.Error(), "k") {
			t.Errorf("Put of invalid JSON: error %q does not name the key", err)
		}
	}
	if err := s.Put(ctx, good, "", json.RawMessage(`1`), store.PutOptions{}); err == nil {
		t.Error("Put with an empty key succeeded, want an error")
	}
	if err := s.Put(ctx, good, "k", json.RawMessage(`1`), store.PutOptions{TTL: -time.Second}); err == nil {
		t.Error("Put with a negative TTL succeeded, want an error")
	}
	checkNotFound(t, s, good, "k")
	check(t, "Search after rejected Puts", []string{}, search(t, s, b, store.Query{}))

	for _, q := range []store.Query{{Limit: -1}, {Offset: -1}} {
		if _, err := s.Search(ctx, b, q); err == nil {
			t.Errorf("Search(%+v) succeeded, want an error", q)
		}
	}
	for _, q := range []store.NamespaceQuery{{Prefix: b, Limit: -1}, {Prefix: b, Offset: -1}, {Prefix: b, MaxDepth: -1}} {
		if _, err := s.ListNamespaces(ctx, q); err == nil {
			t.Errorf("ListNamespaces(%+v) succeeded, want an error", q)
		}
	}
}

func testReplace(t *testing.T, s store.Store) {
	b := base(t)
	put(t, s, b, "k", `{"v":1}`)
	first := get(t, s, b, "k")
	time.Sleep(20 * time.Millisecond)
	putTTL(t, s, b, "k", `{"v":2}`, time.Hour)
	second := get(t, s, b, "k")
	check(t, "replaced value", json.RawMessage(`{"v":2}`), second.Value)
	if !second.Created.Equal(first.Created) {
		t.Errorf("replacing changed Created from %v to %v", first.Created, second.Created)
	}
	if !second.Updated.After(first.Updated) {
		t.Errorf("replacing did not advance Updated: %v, then %v", first.Updated, second.Updated)
	}
	if second.Expires.IsZero() {
		t.Error("replacing with a TTL left Expires zero")
	}
	// Replacing without a TTL makes the item permanent again.
	put(t, s, b, "k", `{"v":3}`)
	third := get(t, s, b, "k")
	if !third.Expires.IsZero() {
		t.Errorf("replacing without a TTL kept Expires %v", third.Expires)
	}
	if !third.Created.Equal(first.Created) {
		t.Errorf("replacing changed Created from %v to %v", first.Created, third.Created)
	}
	check(t, "Search after replacing", []string{name(b, "k")}, search(t, s, b, store.Query{}))
}

func testDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	put(t, s, b, "a", `1`)
	put(t, s, b, "b", `2`)
	put(t, s, ns(b, "sub"), "a", `3`)
	if err := s.Delete(ctx, b, "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkNotFound(t, s, b, "a")
	check(t, "kept item", json.RawMessage(`2`), get(t, s, b, "b").Value)
	check(t, "item of a deeper namespace", json.RawMessage(`3`), get(t, s, ns(b, "sub"), "a").Value)
	if err := s.Delete(ctx, b, "a"); err != nil {
		t.Errorf("Delete of a deleted item: %v", err)
	}
	if err := s.Delete(ctx, ns(b, "never"), "x"); err != nil {
		t.Errorf("Delete of a missing item: %v", err)
	}
	check(t, "Search after Delete", []string{name(b, "b"), name(ns(b, "sub"), "a")}, search(t, s, b, store.Query{}))
	// A deleted item comes back as a new item.
	put(t, s, b, "a", `4`)
	check(t, "item put again", json.RawMessage(`4`), get(t, s, b, "a").Value)
}

func testTTL(t *testing.T, s store.Store) {
	b := base(t)
	start := time.Now()
	putTTL(t, s, ns(b, "a"), "ttl", `{"v":"short"}`, 50*time.Millisecond)
	// An item nothing reads while it expires, and one put just after it.
	other := base(t)
	putTTL(t, s, other, "ttl", `{"v":"short"}`, 50*time.Millisecond)
	put(t, s, other, "ref", `{"v":"ref"}`)
	putTTL(t, s, ns(b, "b"), "ttl", `{"v":"short"}`, 50*time.Millisecond)
	put(t, s, ns(b, "a"), "keep", `{"v":"keep"}`)
	putTTL(t, s, ns(b, "a"), "long", `{"v":"long"}`, time.Hour)

	long := get(t, s, ns(b, "a"), "long")
	if d := long.Expires.Sub(long.Updated); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Errorf("item with a 1h TTL expires %v after its Put, want 1h", d)
	}

	deadline := start.Add(2 * time.Second)
	for _, n := range [][]string{ns(b, "a"), ns(b, "b")} {
		for {
			_, err := s.Get(context.Background(), n, "ttl")
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				t.Fatalf("Get of an expiring item: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("item %q with a 50ms TTL is still there after 2s", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// An expired item put again is a new item, even when nothing has read
	// it since it expired.
	time.Sleep(100 * time.Millisecond)
	putTTL(t, s, other, "ttl", `{"v":"again"}`, time.Hour)
	again, ref := get(t, s, other, "ttl"), get(t, s, other, "ref")
	if !again.Created.After(ref.Created) {
		t.Errorf("item put again after its expiry has Created %v, not after %v of an item put before it expired", again.Created, ref.Created)
	}
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("item with a 50ms TTL expired after %v", elapsed)
	}
	check(t, "item without TTL", json.RawMessage(`{"v":"keep"}`), get(t, s, ns(b, "a"), "keep").Value)
	check(t, "Search after expiry", []string{name(ns(b, "a"), "keep"), name(ns(b, "a"), "long")}, search(t, s, b, store.Query{}))
	check(t, "Search by filter after expiry", []string{}, search(t, s, b, store.Query{Filter: map[string]any{"v": "short"}}))
	check(t, "ListNamespaces after expiry", [][]string{ns(b, "a")}, listNamespaces(t, s, store.NamespaceQuery{Prefix: b}))

	putTTL(t, s, ns(b, "b"), "ttl", `{"v":"again"}`, time.Hour)
	check(t, "ListNamespaces after a new Put", [][]string{ns(b, "a"), ns(b, "b")}, listNamespaces(t, s, store.NamespaceQuery{Prefix: b}))
}

func testDeepCopy(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	n := ns(b, "x")
	value := json.RawMessage(`{"a":[1,2]}`)
	if err := s.Put(ctx, n, "k", value, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	value[2] = 'Z'
	n[len(n)-1] = "changed"
	n = ns(b, "x")
	want := json.RawMessage(`{"a":[1,2]}`)
	check(t, "value after changing the Put input", want, get(t, s, n, "k").Value)
	check(t, "Search after changing the Put input", []string{name(n, "k")}, search(t, s, b, store.Query{}))

	it := get(t, s, n, "k")
	it.Value[2] = 'Z'
	it.Namespace[0] = "changed"
	check(t, "value after changing Get's result", want, get(t, s, n, "k").Value)

	items, err := s.Search(ctx, b, store.Query{})
	if err != nil || len(items) != 1 {
		t.Fatalf("Search = %d items, %v; want 1", len(items), err)
	}
	items[0].Value[2] = 'Z'
	items[0].Namespace[0] = "changed"
	check(t, "value after changing Search's result", want, get(t, s, n, "k").Value)

	nss := listNamespaces(t, s, store.NamespaceQuery{Prefix: b})
	if len(nss) != 1 {
		t.Fatalf("ListNamespaces = %q, want one namespace", nss)
	}
	nss[0][0] = "changed"
	check(t, "ListNamespaces after changing its result", [][]string{n}, listNamespaces(t, s, store.NamespaceQuery{Prefix: b}))
}

type generic struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func testGeneric(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	want := generic{Name: "ada", N: 3}
	if err := store.Put(ctx, s, b, "doc", want, store.PutOptions{}); err != nil {
		t.Fatalf("store.Put: %v", err)
	}
	got, err := store.Get[generic](ctx, s, b, "doc")
	if err != nil {
		t.Fatalf("store.Get: %v", err)
	}
	check(t, "store.Get", want, got)
	check(t, "stored JSON", json.RawMessage(`{"name":"ada","n":3}`), get(t, s, b, "doc").Value)

	put(t, s, b, "wrong", `"a string"`)
	if _, err := store.Get[generic](ctx, s, b, "wrong"); err == nil {
		t.Error("store.Get of a value of another type succeeded, want an error")
	} else {
		if !strings.Contains(err.Error(), strings.Join(b, "/")+"/wrong") {
			t.Errorf("decode error %q does not name the item", err)
		}
		if errors.Is(err, store.ErrNotFound) {
			t.Errorf("decode error %q wraps ErrNotFound", err)
		}
	}
	if _, err := store.Get[generic](ctx, s, b, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("store.Get of a missing item: error = %v, want ErrNotFound", err)
	}
	if err := store.Put(ctx, s, b, "chan", make(chan int), store.PutOptions{}); err == nil {
		t.Error("store.Put of a value JSON cannot encode succeeded, want an error")
	}
	checkNotFound(t, s, b, "chan")
}

func testConcurrent(t *testing.T, s store.Store) {
	const goroutines, each = 16, 20
	ctx := context.Background()
	b := base(t)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			n := ns(b, fmt.Sprintf("g%02d", g))
			for i := range each {
				key := fmt.Sprintf("k%02d", i)
				v := json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				if err := s.Put(ctx, n, key, v, store.PutOptions{}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Get(ctx, n, key); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Search(ctx, b, store.Query{Limit: 5}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		n := ns(b, fmt.Sprintf("g%02d", g))
		items, err := s.Search(ctx, n, store.Query{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != each {
			t.Errorf("namespace %q has %d items, want %d", n, len(items), each)
		}
		for i, it := range items {
			check(t, "concurrently written item", json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)), it.Value)
		}
	}
	if got := listNamespaces(t, s, store.NamespaceQuery{Prefix: b}); len(got) != goroutines {
		t.Errorf("ListNamespaces = %d namespaces, want %d", len(got), goroutines)
	}
}

func testCanceledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := base(t)
	put(t, s, b, "k", `1`)
	checkCanceled := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: error = %v, want context.Canceled", what, err)
		}
	}
	checkCanceled("Put", s.Put(ctx, b, "other", json.RawMessage(`1`), store.PutOptions{}))
	_, err := s.Get(ctx, b, "k")
	checkCanceled("Get", err)
	checkCanceled("Delete", s.Delete(ctx, b, "k"))
	_, err = s.Search(ctx, b, store.Query{})
	checkCanceled("Search", err)
	_, err = s.ListNamespaces(ctx, store.NamespaceQuery{Prefix: b})
	checkCanceled("ListNamespaces", err)
	check(t, "items after canceled calls", []string{name(b, "k")}, search(t, s, b, store.Query{}))
}
