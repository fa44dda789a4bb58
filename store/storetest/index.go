package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
)

// RunIndex runs the semantic-search part of the suite: newStore must return
// a Store opened with cfg as its index (cfg's embedder is an
// embedtest.Hash the subtests inspect and make fail). As with Run, the
// Stores may share their data; every subtest searches only under its own
// namespace.
func RunIndex(t *testing.T, newStore func(t *testing.T, cfg store.IndexConfig) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, e *embedtest.Hash)
	}{
		{"Rank", testIndexRank},
		{"PrefixFilterPaging", testIndexPrefixFilterPaging},
		{"Fields", testIndexFields},
		{"Reembed", testIndexReembed},
		{"Delete", testIndexDelete},
		{"EmbedderFails", testIndexEmbedderFails},
		{"Bounds", testIndexBounds},
		{"Expiry", testIndexExpiry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := embedtest.New(dims)
			tc.fn(t, newStore(t, store.IndexConfig{Embedder: e, Fields: []string{"text"}}), e)
		})
	}
}

const dims = 128

// hit is one result of a semantic search as the tests compare it.
type hit struct {
	Name  string
	Score float64
}

func query(t *testing.T, s store.Store, prefix []string, q store.Query) []hit {
	t.Helper()
	items, err := s.Search(context.Background(), prefix, q)
	if err != nil {
		t.Fatalf("Search(%q, %+v): %v", prefix, q, err)
	}
	out := []hit{}
	for _, it := range items {
		if it.Score == nil {
			t.Fatalf("Search(%q, %+v): item %s has no Score", prefix, q, name(it.Namespace, it.Key))
		}
		// Rounded so backends' float paths compare equal.
		out = append(out, hit{name(it.Namespace, it.Key), math.Round(*it.Score*1e5) / 1e5})
	}
	return out
}

// score is the similarity the hash embedder gives two texts, rounded as
// query rounds.
func score(a, b string) float64 {
	return math.Round(store.Cosine(embedtest.Vector(a, dims), embedtest.Vector(b, dims))*1e5) / 1e5
}

func textValue(text string) string {
	b, _ := json.Marshal(map[string]string{"text": text})
	return string(b)
}

func testIndexRank(t *testing.T, s store.Store, _ *embedtest.Hash) {
	b := base(t)
	docs := map[string]string{
		"pasta":  "likes pasta and italian food",
		"sushi":  "likes sushi and japanese food",
		"hiking": "goes hiking in the mountains on weekends",
		"dark":   "prefers dark mode in every editor",
	}
	for k, v := range docs {
		put(t, s, b, k, textValue(v))
	}
	// A plain Search still orders by key and carries no score.
	items, err := s.Search(context.Background(), b, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Score != nil {
			t.Errorf("plain Search: item %s has Score %v; want nil", it.Key, *it.Score)
		}
	}
	const q = "what food does the user like: italian pasta?"
	got := query(t, s, b, store.Query{Text: q, Limit: 2})
	want := []hit{{name(b, "pasta"), score(q, docs["pasta"])}, {name(b, "sushi"), score(q, docs["sushi"])}}
	check(t, "ranked", want, got)
	if got[0].Score <= got[1].Score {
		t.Errorf("scores %v, %v are not decreasing", got[0].Score, got[1].Score)
	}
	// Every indexed item matches a query, however weakly.
	if all := query(t, s, b, store.Query{Text: q, Limit: 10}); len(all) != 4 {
		t.Errorf("query with limit 10 found %d items; want all 4: %v", len(all), all)
	}
	// Equal scores rank by key.
	put(t, s, b, "z-dup", textValue(docs["dark"]))
	put(t, s, b, "a-dup", textValue(docs["dark"]))
	got = query(t, s, b, store.Query{Text: "dark mode editor", Limit: 3})
	names := []string{got[0].Name, got[1].Name, got[2].Name}
	check(t, "tie order", []string{name(b, "a-dup"), name(b, "dark"), name(b, "z-dup")}, names)
}

func testIndexPrefixFilterPaging(t *testing.T, s store.Store, _ *embedtest.Hash) {
	b := base(t)
	put(t, s, ns(b, "u1"), "a", `{"text": "red apples", "kind": "fruit"}`)
	put(t, s, ns(b, "u1"), "b", `{"text": "red cars", "kind": "car"}`)
	put(t, s, ns(b, "u1"), "c", `{"text": "green apples", "kind": "fruit"}`)
	put(t, s, ns(b, "u2"), "a", `{"text": "red apples", "kind": "fruit"}`)
	const q = "red apples"
	all := query(t, s, b, store.Query{Text: q, Limit: 10})
	if len(all) != 4 || all[0].Name != name(ns(b, "u1"), "a") || all[1].Name != name(ns(b, "u2"), "a") {
		t.Errorf("query over both users = %v; want u1/a, u2/a first", all)
	}
	u1 := query(t, s, ns(b, "u1"), store.Query{Text: q, Limit: 10})
	check(t, "prefix u1", []string{name(ns(b, "u1"), "a"), name(ns(b, "u1"), "b"), name(ns(b, "u1"), "c")}[:1], []string{u1[0].Name})
	if len(u1) != 3 {
		t.Errorf("prefix u1 found %d items; want 3", len(u1))
	}
	fruit := query(t, s, ns(b, "u1"), store.Query{Text: q, Limit: 10, Filter: map[string]any{"kind": "fruit"}})
	check(t, "prefix and filter", []hit{{name(ns(b, "u1"), "a"), score(q, "red apples")}, {name(ns(b, "u1"), "c"), score(q, "green apples")}}, fruit)
	paged := query(t, s, b, store.Query{Text: q, Limit: 2, Offset: 1})
	check(t, "offset 1 limit 2", all[1:3], paged)
	check(t, "offset past the end", []hit{}, query(t, s, b, store.Query{Text: q, Offset: 4}))
}

func testIndexFields(t *testing.T, s store.Store, _ *embedtest.Hash) {
	ctx := context.Background()
	b := base(t)
	// The config indexes "text"; an item without it has nothing to embed.
	put(t, s, b, "notext", `{"title": "quantum physics"}`)
	// A per-put override indexes other paths, each on its own.
	if err := s.Put(ctx, b, "override", json.RawMessage(`{"title": "quantum physics", "tags": ["cooking", "baking"], "text": "unrelated"}`),
		store.PutOptions{Index: []string{"title", "tags[*]"}}); err != nil {
		t.Fatal(err)
	}
	// NoIndex stores without embedding.
	if err := s.Put(ctx, b, "noindex", json.RawMessage(textValue("quantum physics")), store.PutOptions{NoIndex: true}); err != nil {
		t.Fatal(err)
	}
	put(t, s, b, "plain", textValue("quantum physics"))
	got := query(t, s, b, store.Query{Text: "quantum physics", Limit: 10})
	check(t, "indexed items", []hit{{name(b, "override"), 1}, {name(b, "plain"), 1}}, got)
	// The best field decides the score: "baking" matches a tag exactly.
	got = query(t, s, b, store.Query{Text: "baking", Limit: 1})
	check(t, "best field", []hit{{name(b, "override"), 1}}, got)
	// "unrelated" was in the value but not in the override's fields.
	if got := query(t, s, b, store.Query{Text: "unrelated", Limit: 10}); len(got) > 0 && got[0].Score > 0.5 {
		t.Errorf("query for an unindexed field's text = %v; want no good match", got)
	}
	// Every item stays visible to a plain Search.
	check(t, "plain search", []string{name(b, "noindex"), name(b, "notext"), name(b, "override"), name(b, "plain")},
		search(t, s, b, store.Query{}))
	// A whole-document index embeds the JSON.
	if err := s.Put(ctx, b, "whole", json.RawMessage(`{"zebra": "stripes"}`), store.PutOptions{Index: []string{"$"}}); err != nil {
		t.Fatal(err)
	}
	got = query(t, s, b, store.Query{Text: "zebra stripes", Limit: 1})
	check(t, "whole document", []string{name(b, "whole")}, []string{got[0].Name})
	// A malformed path is refused.
	err := s.Put(ctx, b, "bad", json.RawMessage(`{}`), store.PutOptions{Index: []string{"a[x]"}})
	if err == nil {
		t.Error("Put with index path a[x] succeeded; want an error")
	}
}

func testIndexReembed(t *testing.T, s store.Store, e *embedtest.Hash) {
	b := base(t)
	put(t, s, b, "k", textValue("likes tea"))
	put(t, s, b, "other", textValue("likes coffee"))
	put(t, s, b, "k", textValue("likes chocolate"))
	got := query(t, s, b, store.Query{Text: "chocolate", Limit: 1})
	check(t, "after update", []hit{{name(b, "k"), score("chocolate", "likes chocolate")}}, got)
	got = query(t, s, b, store.Query{Text: "tea", Limit: 10})
	for _, h := range got {
		if h.Name == name(b, "k") && h.Score != score("tea", "likes chocolate") {
			t.Errorf("query tea scored the updated item %v; want its new text's score %v", h.Score, score("tea", "likes chocolate"))
		}
	}
	// Replacing an item with NoIndex drops its old vectors.
	if err := s.Put(context.Background(), b, "k", json.RawMessage(textValue("likes chocolate")), store.PutOptions{NoIndex: true}); err != nil {
		t.Fatal(err)
	}
	check(t, "after NoIndex replace", []string{name(b, "other")}, names(query(t, s, b, store.Query{Text: "chocolate"})))
	if n := len(e.Texts()); n < 4 {
		t.Errorf("the embedder saw %d texts; want at least 4 (three puts and the queries)", n)
	}
}

func names(hs []hit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

func testIndexDelete(t *testing.T, s store.Store, _ *embedtest.Hash) {
	ctx := context.Background()
	b := base(t)
	put(t, s, b, "k", textValue("secret plans"))
	put(t, s, b, "j", textValue("public notes"))
	if err := s.Delete(ctx, b, "k"); err != nil {
		t.Fatal(err)
	}
	check(t, "after delete", []string{name(b, "j")}, names(query(t, s, b, store.Query{Text: "secret plans"})))
	// Put again without an index: the deleted item's vectors are gone.
	if err := s.Put(ctx, b, "k", json.RawMessage(textValue("secret plans")), store.PutOptions{NoIndex: true}); err != nil {
		t.Fatal(err)
	}
	check(t, "put again without index", []string{name(b, "j")}, names(query(t, s, b, store.Query{Text: "secret plans"})))
}

func testIndexEmbedderFails(t *testing.T, s store.Store, e *embedtest.Hash) {
	ctx := context.Background()
	b := base(t)
	put(t, s, b, "k", textValue("first version"))
	e.FailWith(nil)
	err := s.Put(ctx, b, "k", json.RawMessage(textValue("second version")), store.PutOptions{})
	if !errors.Is(err, embedtest.ErrInjected) {
		t.Errorf("Put with a failing embedder = %v; want an error wrapping ErrInjected", err)
	}
	if _, err := s.Search(ctx, b, store.Query{Text: "first"}); !errors.Is(err, embedtest.ErrInjected) {
		t.Errorf("Search with a failing embedder = %v; want an error wrapping ErrInjected", err)
	}
	// A NoIndex put needs no embedder.
	if err := s.Put(ctx, b, "n", json.RawMessage(textValue("x")), store.PutOptions{NoIndex: true}); err != nil {
		t.Errorf("NoIndex Put with a failing embedder: %v", err)
	}
	e.Recover()
	check(t, "the failed Put left the item", json.RawMessage(textValue("first version")), get(t, s, b, "k").Value)
	got := query(t, s, b, store.Query{Text: "first version", Limit: 1})
	check(t, "and its vectors", []hit{{name(b, "k"), 1}}, got)
}

func testIndexBounds(t *testing.T, s store.Store, _ *embedtest.Hash) {
	ctx := context.Background()
	b := base(t)
	if _, err := s.Search(ctx, b, store.Query{Text: "x", Offset: store.MaxRanked, Limit: 1}); err == nil {
		t.Error("Search with offset+limit past MaxRanked succeeded; want an error")
	}
	var many []string
	for range store.MaxIndexTexts + 1 {
		many = append(many, "w")
	}
	v, _ := json.Marshal(map[string]any{"text": "t", "tags": many})
	err := s.Put(ctx, b, "many", v, store.PutOptions{Index: []string{"tags[*]"}})
	if err == nil {
		t.Errorf("Put yielding %d texts succeeded; want an error", len(many))
	}
	checkNotFound(t, s, b, "many")
}

func testIndexExpiry(t *testing.T, s store.Store, _ *embedtest.Hash) {
	b := base(t)
	putTTL(t, s, b, "short", textValue("fleeting thought"), time.Second)
	put(t, s, b, "long", textValue("lasting thought"))
	if got := names(query(t, s, b, store.Query{Text: "fleeting thought"})); len(got) != 2 || got[0] != name(b, "short") {
		t.Fatalf("before expiry: %v", got)
	}
	time.Sleep(1100 * time.Millisecond)
	check(t, "after expiry", []string{name(b, "long")}, names(query(t, s, b, store.Query{Text: "fleeting thought"})))
}

// testSearchTextWithoutIndex checks that a store without an index refuses
// a semantic query instead of ignoring it.
func testSearchTextWithoutIndex(t *testing.T, s store.Store) {
	_, err := s.Search(context.Background(), base(t), store.Query{Text: "anything"})
	if !errors.Is(err, store.ErrNoIndex) {
		t.Errorf("Search with Text on a store without an index = %v; want an error wrapping ErrNoIndex", err)
	}
}
