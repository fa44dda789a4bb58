package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/store"
)

func testSearchPrefix(t *testing.T, s store.Store) {
	b := base(t)
	tag := uuid.NewString()
	v := fmt.Sprintf(`{"tag":%q}`, tag)
	// Put out of order; element-wise order puts ["a" "b"] before ["a-b"],
	// although "a/b" sorts after "a-b" as a joined string.
	put(t, s, ns(b, "b"), "k", v)
	put(t, s, ns(b, "a-b"), "k", v)
	put(t, s, ns(b, "a", "b"), "k", v)
	put(t, s, ns(b, "a"), "c", v)
	put(t, s, ns(b, "a"), "a", v)
	put(t, s, ns(b, "a"), "b", v)
	put(t, s, ns(b, "a", "c"), "k", v)
	put(t, s, ns(b, "ab"), "k", v)

	all := []string{
		name(ns(b, "a"), "a"), name(ns(b, "a"), "b"), name(ns(b, "a"), "c"),
		name(ns(b, "a", "b"), "k"), name(ns(b, "a", "c"), "k"),
		name(ns(b, "a-b"), "k"), name(ns(b, "ab"), "k"), name(ns(b, "b"), "k"),
	}
	q := store.Query{Limit: 100}
	check(t, "Search base", all, search(t, s, b, q))
	check(t, "Search [a]", all[:5], search(t, s, ns(b, "a"), q))
	check(t, "Search [a b]", all[3:4], search(t, s, ns(b, "a", "b"), q))
	check(t, "Search [a b k]", []string{}, search(t, s, ns(b, "a", "b", "k"), q))
	check(t, "Search [nope]", []string{}, search(t, s, ns(b, "nope"), q))
	// An empty prefix searches every namespace; the tag keeps out items of
	// other subtests sharing the Store.
	filtered := store.Query{Limit: 100, Filter: map[string]any{"tag": tag}}
	check(t, "Search without prefix", all, search(t, s, nil, filtered))
	check(t, "Search with an empty prefix", all, search(t, s, []string{}, filtered))
}

func testSearchFilter(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	items := map[string]string{
		"int":      `{"n": 1, "s": "x", "b": true, "o": {"k": [1, 2]}, "z": null}`,
		"float":    `{"n": 1.0, "s": "x", "b": false}`,
		"exp":      `{"n": 1e0, "s": "y"}`,
		"string":   `{"n": "1", "s": "x"}`,
		"two":      `{"n": 2, "o": {"k": [1, 2, 3]}}`,
		"big":      `{"n": 9007199254740993}`,
		"bigger":   `{"n": 9007199254740992}`,
		"nested":   `{"o": {"k": [1.0, 2], "extra": 1}}`,
		"nested2":  `{"o": {"k": [1.0, 2e0]}}`,
		"array":    `[1, 2]`,
		"scalar":   `"x"`,
		"nullval":  `null`,
		"objinarr": `{"arr": [{"a": 1}, {"b": [true, null]}]}`,
	}
	for k, v := range items {
		put(t, s, b, k, v)
	}
	q := func(filter map[string]any) store.Query { return store.Query{Limit: 100, Filter: filter} }
	keys := func(ks ...string) []string {
		out := []string{}
		for _, k := range ks {
			out = append(out, name(b, k))
		}
		return out
	}
	cases := []struct {
		what   string
		filter map[string]any
		want   []string
	}{
		{"number equal across forms", map[string]any{"n": 1}, keys("exp", "float", "int")},
		{"float filter", map[string]any{"n": 1.0}, keys("exp", "float", "int")},
		{"int64 filter", map[string]any{"n": int64(2)}, keys("two")},
		{"string is not a number", map[string]any{"n": "1"}, keys("string")},
		{"large integers compare exactly", map[string]any{"n": uint64(9007199254740993)}, keys("big")},
		{"two fields", map[string]any{"n": 1, "s": "x"}, keys("float", "int")},
		{"bool", map[string]any{"b": true}, keys("int")},
		{"false is not missing", map[string]any{"b": false}, keys("float")},
		{"null matches a null field only", map[string]any{"z": nil}, keys("int")},
		{"object", map[string]any{"o": map[string]any{"k": []int{1, 2}}}, keys("int", "nested2")},
		{"array of objects", map[string]any{"arr": []any{map[string]int{"a": 1}, map[string]any{"b": []any{true, nil}}}}, keys("objinarr")},
		{"missing field", map[string]any{"nope": 1}, keys()},
		{"no match", map[string]any{"n": 3}, keys()},
		{"empty filter", map[string]any{}, keys("array", "big", "bigger", "exp", "float", "int", "nested", "nested2", "nullval", "objinarr", "scalar", "string", "two")},
	}
	for _, tc := range cases {
		check(t, "Search filter "+tc.what, tc.want, search(t, s, b, q(tc.filter)))
	}
	if _, err := s.Search(ctx, b, q(map[string]any{"n": make(chan int)})); err == nil {
		t.Error("Search with a filter value JSON cannot encode succeeded, want an error")
	}
}

func testSearchPaging(t *testing.T, s store.Store) {
	b := base(t)
	var all []string
	for i := range 25 {
		key := fmt.Sprintf("k%02d", i)
		put(t, s, b, key, fmt.Sprintf(`{"i":%d}`, i))
		all = append(all, name(b, key))
	}
	check(t, "Search default limit", all[:10], search(t, s, b, store.Query{}))
	check(t, "Search offset 10", all[10:20], search(t, s, b, store.Query{Offset: 10}))
	check(t, "Search offset 20", all[20:], search(t, s, b, store.Query{Offset: 20}))
	check(t, "Search offset past the end", []string{}, search(t, s, b, store.Query{Offset: 25}))
	check(t, "Search limit 3 offset 4", all[4:7], search(t, s, b, store.Query{Limit: 3, Offset: 4}))
	check(t, "Search limit 30", all, search(t, s, b, store.Query{Limit: 30}))
	check(t, "Search filter then page", []string{name(b, "k07")},
		search(t, s, b, store.Query{Filter: map[string]any{"i": 7}, Offset: 0, Limit: 1}))
}

func testListNamespaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	b := base(t)
	for _, n := range [][]string{
		ns(b, "b"), ns(b, "a", "b", "c"), ns(b, "a-b"), ns(b, "a"), ns(b, "a", "c"), ns(b, "a", "b"),
	} {
		put(t, s, n, "k1", `1`)
		put(t, s, n, "k2", `2`)
	}
	put(t, s, ns(b, "gone"), "k", `1`)
	if err := s.Delete(ctx, ns(b, "gone"), "k"); err != nil {
		t.Fatal(err)
	}

	list := func(q store.NamespaceQuery) [][]string {
		t.Helper()
		return listNamespaces(t, s, q)
	}
	check(t, "ListNamespaces base", [][]string{
		ns(b, "a"), ns(b, "a", "b"), ns(b, "a", "b", "c"), ns(b, "a", "c"), ns(b, "a-b"), ns(b, "b"),
	}, list(store.NamespaceQuery{Prefix: b}))
	check(t, "ListNamespaces [a]", [][]string{
		ns(b, "a"), ns(b, "a", "b"), ns(b, "a", "b", "c"), ns(b, "a", "c"),
	}, list(store.NamespaceQuery{Prefix: ns(b, "a")}))
	check(t, "ListNamespaces depth +1", [][]string{ns(b, "a"), ns(b, "a-b"), ns(b, "b")},
		list(store.NamespaceQuery{Prefix: b, MaxDepth: len(b) + 1}))
	check(t, "ListNamespaces depth +2", [][]string{
		ns(b, "a"), ns(b, "a", "b"), ns(b, "a", "c"), ns(b, "a-b"), ns(b, "b"),
	}, list(store.NamespaceQuery{Prefix: b, MaxDepth: len(b) + 2}))
	check(t, "ListNamespaces depth of the prefix", [][]string{b}, list(store.NamespaceQuery{Prefix: b, MaxDepth: len(b)}))
	check(t, "ListNamespaces limit and offset", [][]string{ns(b, "a", "b"), ns(b, "a", "b", "c")},
		list(store.NamespaceQuery{Prefix: b, Limit: 2, Offset: 1}))
	check(t, "ListNamespaces depth then page", [][]string{ns(b, "b")},
		list(store.NamespaceQuery{Prefix: b, MaxDepth: len(b) + 1, Offset: 2, Limit: 5}))
	check(t, "ListNamespaces offset past the end", [][]string{}, list(store.NamespaceQuery{Prefix: b, Offset: 6}))
	check(t, "ListNamespaces of a missing prefix", [][]string{}, list(store.NamespaceQuery{Prefix: ns(b, "nope")}))

	// Deleting a namespace's last item removes the namespace.
	for _, k := range []string{"k1", "k2"} {
		if err := s.Delete(ctx, ns(b, "b"), k); err != nil {
			t.Fatal(err)
		}
	}
	check(t, "ListNamespaces after emptying [b]", [][]string{ns(b, "a"), ns(b, "a-b")},
		list(store.NamespaceQuery{Prefix: b, MaxDepth: len(b) + 1}))

	// Without a prefix every namespace is listed; this subtest's are
	// found under "storetest" in order.
	var mine [][]string
	for offset := 0; ; offset += 100 {
		page := list(store.NamespaceQuery{Prefix: []string{"storetest"}, Offset: offset})
		for _, n := range page {
			if len(n) > len(b) && n[2] == b[2] {
				mine = append(mine, n)
			}
		}
		if len(page) < 100 {
			break
		}
	}
	check(t, "ListNamespaces under storetest", [][]string{
		ns(b, "a"), ns(b, "a", "b"), ns(b, "a", "b", "c"), ns(b, "a", "c"), ns(b, "a-b"),
	}, mine)
	if got := list(store.NamespaceQuery{}); len(got) == 0 {
		t.Error("ListNamespaces without a prefix returned nothing")
	}
}

func testListNamespacesPaging(t *testing.T, s store.Store) {
	b := base(t)
	var all [][]string
	for i := range 105 {
		n := ns(b, fmt.Sprintf("n%03d", i))
		put(t, s, n, "k", `1`)
		all = append(all, n)
	}
	check(t, "ListNamespaces default limit", all[:100], listNamespaces(t, s, store.NamespaceQuery{Prefix: b}))
	check(t, "ListNamespaces second page", all[100:], listNamespaces(t, s, store.NamespaceQuery{Prefix: b, Offset: 100}))
	check(t, "ListNamespaces limit 200", all, listNamespaces(t, s, store.NamespaceQuery{Prefix: b, Limit: 200}))
}
