package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/store"
)

// testExport checks store.Exporter on a Store that implements it: paging
// visits every live item once with its times, importing keeps the times
// and skips items the store has.
func testExport(t *testing.T, s store.Store) {
	ex, ok := s.(store.Exporter)
	if !ok {
		t.Skipf("%T does not implement store.Exporter", s)
	}
	ctx := context.Background()
	b := base(t)
	want := map[string]*store.Item{}
	for i, n := range []struct {
		ns  []string
		key string
		ttl time.Duration
	}{{ns(b, "a"), "k1", 0}, {ns(b, "a"), "k2", time.Hour}, {ns(b, "a", "deep"), "k1", 0}, {ns(b, "b"), "k0", 0}} {
		v := json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`)
		if err := s.Put(ctx, n.ns, n.key, v, store.PutOptions{TTL: n.ttl}); err != nil {
			t.Fatal(err)
		}
		it, err := s.Get(ctx, n.ns, n.key)
		if err != nil {
			t.Fatal(err)
		}
		want[itemKey(it)] = it
	}
	if _, err := ex.ExportItems(ctx, nil, 0); err == nil {
		t.Error("ExportItems with limit 0 is not an error")
	}
	var got []*store.Item
	var after *store.Item
	for {
		page, err := ex.ExportItems(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page {
			if len(it.Namespace) > 1 && it.Namespace[1] == b[1] && it.Namespace[2] == b[2] {
				got = append(got, it)
			}
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	if len(got) != len(want) {
		t.Fatalf("exported %d items of this test, want %d", len(got), len(want))
	}
	for _, it := range got {
		if diff := cmp.Diff(want[itemKey(it)], it, cmpOpts); diff != "" {
			t.Errorf("exported %s (-put +exported):\n%s", itemKey(it), diff)
		}
	}
	// Importing what the store has stores nothing and changes nothing.
	if n, err := ex.ImportItems(ctx, got); err != nil || n != 0 {
		t.Errorf("ImportItems of present items = %d, %v; want 0", n, err)
	}
	// Items imported under another namespace keep their times.
	moved := make([]*store.Item, 0, len(got))
	for _, it := range got {
		c := *it
		c.Namespace = append(slices.Clone(it.Namespace), "moved")
		c.Created = it.Created.Add(-48 * time.Hour)
		c.Updated = it.Updated.Add(-24 * time.Hour)
		moved = append(moved, &c)
	}
	if n, err := ex.ImportItems(ctx, moved); err != nil || n != len(moved) {
		t.Fatalf("ImportItems = %d, %v; want %d", n, err, len(moved))
	}
	for _, it := range moved {
		back, err := s.Get(ctx, it.Namespace, it.Key)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(it, back, cmpOpts); diff != "" {
			t.Errorf("imported %s (-imported +read):\n%s", itemKey(it), diff)
		}
	}
	bad := []*store.Item{{Namespace: ns(b, "x"), Key: "k", Value: json.RawMessage(`{`)}}
	if _, err := ex.ImportItems(ctx, bad); err == nil {
		t.Error("ImportItems of invalid JSON is not an error")
	}
}

func itemKey(it *store.Item) string {
	b, _ := json.Marshal([]any{it.Namespace, it.Key})
	return string(b)
}
