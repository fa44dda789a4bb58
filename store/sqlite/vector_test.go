package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/embedtest"
	"github.com/trellis-agents/trellis/store/storetest"
)

func openIndexed(t testing.TB, path string, cfg store.IndexConfig) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, WithIndex(cfg))
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestIndex runs the semantic-search suite; the Stores share one file.
func TestIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	storetest.RunIndex(t, func(t *testing.T, cfg store.IndexConfig) store.Store {
		return openIndexed(t, path, cfg)
	})
}

func TestIndexInvalidConfig(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), WithIndex(store.IndexConfig{}))
	if err == nil {
		t.Fatal("Open with an index without an embedder succeeded; want an error")
	}
}

// TestVectorsFollowItems checks that the vector rows go with their items:
// deleted, expired and swept, or replaced.
func TestVectorsFollowItems(t *testing.T) {
	ctx := context.Background()
	s := openIndexed(t, filepath.Join(t.TempDir(), "store.db"), store.IndexConfig{Embedder: embedtest.New(8), Fields: []string{"a", "b"}})
	now := time.Now()
	s.now = func() time.Time { return now }
	vectors := func() int {
		var n int
		if err := s.db.Read.QueryRow(`SELECT count(*) FROM store_vectors`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ns := []string{"n"}
	if err := s.Put(ctx, ns, "k", json.RawMessage(`{"a": "x", "b": "y"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ns, "ttl", json.RawMessage(`{"a": "x"}`), store.PutOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if n := vectors(); n != 3 {
		t.Fatalf("%d vectors after two puts; want 3", n)
	}
	if err := s.Put(ctx, ns, "k", json.RawMessage(`{"a": "x"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := vectors(); n != 2 {
		t.Errorf("%d vectors after replacing an item with one field; want 2", n)
	}
	if err := s.Delete(ctx, ns, "k"); err != nil {
		t.Fatal(err)
	}
	if n := vectors(); n != 1 {
		t.Errorf("%d vectors after Delete; want 1", n)
	}
	now = now.Add(2 * time.Second).Add(sweepEvery)
	if err := s.Put(ctx, ns, "new", json.RawMessage(`{}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := vectors(); n != 0 {
		t.Errorf("%d vectors after the sweep removed the expired item; want 0", n)
	}
}
