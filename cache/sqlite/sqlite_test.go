package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/cache"
	"github.com/trellis-agents/trellis/cache/cachetest"
	"github.com/trellis-agents/trellis/cache/sqlite"
	cpsqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, path string) *sqlite.Cache {
	t.Helper()
	c, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func TestConformance(t *testing.T) {
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		return open(t, filepath.Join(t.TempDir(), "cache.db"))
	})
}

func TestEntriesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "node", "k", []byte(`{"v":1}`), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, ok, err := open(t, path).Get(ctx, "node", "k")
	if err != nil || !ok || string(got) != `{"v":1}` {
		t.Fatalf("after reopening, Get = %q, %v, %v; want the stored value", got, ok, err)
	}
}

func TestSharesFileWithCheckpointSaver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	s, err := cpsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := open(t, path)
	if err := c.Set(ctx, "node", "k", []byte("v"), 0); err != nil {
		t.Fatalf("Set in a file the checkpoint saver also uses: %v", err)
	}
	if _, ok, err := c.Get(ctx, "node", "k"); err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
}

func TestSweepDeletesOnlyExpiredRows(t *testing.T) {
	ctx := context.Background()
	c := open(t, filepath.Join(t.TempDir(), "cache.db"))
	for _, k := range []string{"a", "b", "c"} {
		if err := c.Set(ctx, "node", k, []byte(k), 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "node", "kept", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "node", "forever", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	n, err := c.Sweep(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Sweep = %d, %v; want the 3 expired rows", n, err)
	}
	if n, err := c.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0", n, err)
	}
	for _, k := range []string{"kept", "forever"} {
		if _, ok, err := c.Get(ctx, "node", k); err != nil || !ok {
			t.Errorf("Get(%s) after Sweep = %v, %v; want a hit", k, ok, err)
		}
	}
}

func TestSetSweepsLazily(t *testing.T) {
	ctx := context.Background()
	c := open(t, filepath.Join(t.TempDir(), "cache.db"))
	if err := c.Set(ctx, "old", "k", []byte("v"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// Enough Sets to pass a sweep; each replaces the same row.
	for range 300 {
		if err := c.Set(ctx, "node", "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep after 300 Sets = %d, %v; want 0: the Sets should have swept the expired row already", n, err)
	}
}

func TestClearManyNamespaces(t *testing.T) {
	ctx := context.Background()
	c := open(t, filepath.Join(t.TempDir(), "cache.db"))
	var names []string
	for i := range 1200 { // more than one DELETE's worth
		names = append(names, fmt.Sprintf("ns%04d", i))
	}
	for _, ns := range []string{"ns0000", "ns0700", "ns1199", "kept"} {
		if err := c.Set(ctx, ns, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Clear(ctx, names...); err != nil {
		t.Fatalf("Clear of %d namespaces: %v", len(names), err)
	}
	for _, ns := range []string{"ns0000", "ns0700", "ns1199"} {
		if _, ok, _ := c.Get(ctx, ns, "k"); ok {
			t.Errorf("%s survived Clear", ns)
		}
	}
	if _, ok, _ := c.Get(ctx, "kept", "k"); !ok {
		t.Error("Clear removed a namespace it was not given")
	}
}
