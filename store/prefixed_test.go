package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/store"
)

// A prefixed view sees only its own items, without the prefix, and two
// views with different prefixes never see each other's.
func TestPrefixed(t *testing.T) {
	ctx := context.Background()
	base := store.NewMemory()
	a, b := store.Prefixed(base, "tenant:a"), store.Prefixed(base, "tenant:b")
	for _, v := range []store.Store{a, b} {
		if err := v.Put(ctx, []string{"prefs", "u1"}, "lang", json.RawMessage(`"en"`), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Put(ctx, []string{"notes"}, "n", json.RawMessage(`1`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := a.Get(ctx, []string{"prefs", "u1"}, "lang")
	if err != nil || !cmp.Equal(it.Namespace, []string{"prefs", "u1"}) {
		t.Fatalf("get: %+v %v", it, err)
	}
	raw, err := base.Get(ctx, []string{"tenant:a", "prefs", "u1"}, "lang")
	if err != nil || raw == nil {
		t.Fatalf("the base store has no prefixed item: %v", err)
	}
	items, err := b.Search(ctx, nil, store.Query{})
	if err != nil || len(items) != 1 || !cmp.Equal(items[0].Namespace, []string{"prefs", "u1"}) {
		t.Errorf("b's search: %+v %v", items, err)
	}
	nss, err := a.ListNamespaces(ctx, store.NamespaceQuery{MaxDepth: 1})
	if err != nil || !cmp.Equal(nss, [][]string{{"notes"}, {"prefs"}}) {
		t.Errorf("a's namespaces: %v %v", nss, err)
	}
	if err := b.Delete(ctx, []string{"prefs", "u1"}, "lang"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, []string{"prefs", "u1"}, "lang"); err != nil {
		t.Errorf("b's delete removed a's item: %v", err)
	}
}
