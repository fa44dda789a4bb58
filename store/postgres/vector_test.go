package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
	"github.com/trellis-agents/trellis/store/postgres"
	"github.com/trellis-agents/trellis/store/storetest"
)

func openIndexed(t *testing.T, dsn, schema string, cfg store.IndexConfig) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema), postgres.WithIndex(cfg))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestIndex runs the semantic-search suite; the Stores share one schema.
func TestIndex(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	storetest.RunIndex(t, func(t *testing.T, cfg store.IndexConfig) store.Store {
		return openIndexed(t, dsn, schema, cfg)
	})
}

func TestIndexInvalidConfig(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	if _, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema), postgres.WithIndex(store.IndexConfig{})); err == nil {
		t.Fatal("Open with an index without an embedder succeeded; want an error")
	}
}

// TestVectorsFollowItems checks that a Put by a store without an index
// drops the item's old vectors.
func TestVectorsFollowItems(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	s := openIndexed(t, dsn, schema, store.IndexConfig{Embedder: embedtest.New(8), Fields: []string{"a", "b"}})
	plain := open(t, dsn, schema)
	// An item is found by a semantic query only through its vectors.
	found := func() int {
		items, err := s.Search(ctx, []string{"n"}, store.Query{Text: "x y", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(items)
	}
	ns := []string{"n"}
	if err := s.Put(ctx, ns, "k", json.RawMessage(`{"a": "x", "b": "y"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := found(); n != 1 {
		t.Fatalf("%d items found after a put; want 1", n)
	}
	// A store opened without an index drops the vectors of what it puts.
	if err := plain.Put(ctx, ns, "k", json.RawMessage(`{"a": "x"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := found(); n != 0 {
		t.Errorf("%d items found after a put without an index; want 0", n)
	}
}
