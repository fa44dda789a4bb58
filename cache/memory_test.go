package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/cache"
	"github.com/trellis-agents/trellis/cache/cachetest"
)

func TestMemoryConformance(t *testing.T) {
	cachetest.Run(t, func(*testing.T) cache.Cache { return cache.NewMemory() })
}

func TestMemoryConformanceSmallBound(t *testing.T) {
	// The suite's cases hold at most a few hundred entries at once.
	cachetest.Run(t, func(*testing.T) cache.Cache { return cache.NewMemory(cache.WithMaxEntries(400)) })
}

func TestMemoryEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.WithMaxEntries(3))
	for _, k := range []string{"a", "b", "c"} {
		if err := m.Set(ctx, "ns", k, []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Reading a makes b the least recently used.
	if _, ok, _ := m.Get(ctx, "ns", "a"); !ok {
		t.Fatal("a missing before the bound was reached")
	}
	if err := m.Set(ctx, "other", "d", []byte("d"), 0); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 3 {
		t.Fatalf("Len = %d, want the bound 3", m.Len())
	}
	for k, wantHit := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok, _ := m.Get(ctx, "ns", k); ok != wantHit {
			t.Errorf("after eviction Get(%s) hit = %v, want %v", k, ok, wantHit)
		}
	}
	// Replacing an entry does not evict another.
	if err := m.Set(ctx, "other", "d", []byte("d2"), 0); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 3 {
		t.Fatalf("Len after a replace = %d, want 3", m.Len())
	}
}

func TestMemoryDefaultBound(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory()
	for i := range cache.DefaultMaxEntries + 10 {
		if err := m.Set(ctx, "ns", fmt.Sprint(i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != cache.DefaultMaxEntries {
		t.Fatalf("Len = %d, want DefaultMaxEntries %d", m.Len(), cache.DefaultMaxEntries)
	}
	if _, ok, _ := m.Get(ctx, "ns", "0"); ok {
		t.Error("the oldest entry survived past the bound")
	}
}

func TestMemoryExpiredEntryIsDeletedOnGet(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory()
	if err := m.Set(ctx, "ns", "k", []byte("v"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, ok, _ := m.Get(ctx, "ns", "k"); ok {
		t.Fatal("expired entry returned")
	}
	if m.Len() != 0 {
		t.Fatalf("Len = %d after the expired entry was read, want 0", m.Len())
	}
}

func TestMemoryInvalidBound(t *testing.T) {
	m := cache.NewMemory(cache.WithMaxEntries(0))
	ctx := context.Background()
	if err := m.Set(ctx, "ns", "k", nil, 0); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("Set on a Memory with bound 0 = %v, want ErrInvalid", err)
	}
	if _, _, err := m.Get(ctx, "ns", "k"); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("Get on a Memory with bound 0 = %v, want ErrInvalid", err)
	}
	if err := m.Clear(ctx); !errors.Is(err, cache.ErrInvalid) {
		t.Fatalf("Clear on a Memory with bound 0 = %v, want ErrInvalid", err)
	}
}

func TestMemoryClearNamespaceFreesRoom(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.WithMaxEntries(4))
	for _, e := range [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}, {"b", "2"}} {
		if err := m.Set(ctx, e[0], e[1], nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Clear(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 2 {
		t.Fatalf("Len after Clear(a) = %d, want 2", m.Len())
	}
	// Two new entries fit without evicting b's.
	for _, k := range []string{"3", "4"} {
		if err := m.Set(ctx, "c", k, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"1", "2"} {
		if _, ok, _ := m.Get(ctx, "b", k); !ok {
			t.Errorf("b/%s was evicted although Clear(a) made room", k)
		}
	}
}
