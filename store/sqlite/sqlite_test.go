package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/storetest"
)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "new", "dir", "store.db"))
	})
}

// TestLimits checks the size limit; the Stores of one test share a file.
func TestLimits(t *testing.T) {
	paths := map[string]string{}
	storetest.RunLimits(t, func(t *testing.T, maxBytes int) store.Store {
		path, ok := paths[t.Name()]
		if !ok {
			path = filepath.Join(t.TempDir(), "store.db")
			paths[t.Name()] = path
		}
		s, err := Open(context.Background(), path, WithMaxBytes(maxBytes))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestStoreShared runs the suite against one database file shared by every
// subtest.
func TestStoreShared(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"))
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"users", "u1"}
	if err := s.Put(ctx, ns, "profile", json.RawMessage(`{"name":"Ada"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, ns, "session", json.RawMessage(`1`), store.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	first, err := s.Get(ctx, ns, "session")
	if err != nil {
		t.Fatal(err)
	}
	var applied string
	if err := s.db.Read.QueryRow(`SELECT group_concat(version || ' ' || applied_at) FROM schema_migrations WHERE component = ?`, Component).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	var again string
	if err := s.db.Read.QueryRow(`SELECT group_concat(version || ' ' || applied_at) FROM schema_migrations WHERE component = ?`, Component).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != applied {
		t.Errorf("reopening changed the store's migrations from %q to %q", applied, again)
	}
	it, err := s.Get(ctx, ns, "profile")
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Value) != `{"name":"Ada"}` || !slices.Equal(it.Namespace, ns) {
		t.Errorf("Get after reopening = %+v", it)
	}
	second, err := s.Get(ctx, ns, "session")
	if err != nil {
		t.Fatal(err)
	}
	if !second.Expires.Equal(first.Expires) || !second.Created.Equal(first.Created) {
		t.Errorf("times changed across reopening: %+v, then %+v", first, second)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := open(t, path)
	if _, err := s.db.Write.Exec(`INSERT INTO schema_migrations (component, version, applied_at) VALUES (?, ?, 'later')`,
		Component, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), path)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if !errors.Is(err, sqlitedb.ErrNewerSchema) || !strings.Contains(err.Error(), Component) {
		t.Errorf("Open error = %v, want sqlitedb.ErrNewerSchema naming %q", err, Component)
	}
}

func TestNamespaceEncoding(t *testing.T) {
	namespaces := [][]string{
		{"a"}, {"a", ""}, {"a", "b"}, {"a", "b", "c"}, {"a\x00"}, {"a\x00", "b"}, {"a\x01"}, {"a\x01\x02"},
		{"a\x02"}, {"a-b"}, {"ab"}, {"b"}, {"\x00"}, {"\x01"}, {""}, {"", ""}, {"é", "\xff"},
	}
	for _, a := range namespaces {
		enc := encodeNamespace(a)
		dec, err := decodeNamespace(enc)
		if err != nil || !slices.Equal(dec, a) {
			t.Errorf("decode(encode(%q)) = %q, %v", a, dec, err)
		}
		for _, b := range namespaces {
			want := slices.Compare(a, b)
			if got := strings.Compare(string(enc), string(encodeNamespace(b))); got != want {
				t.Errorf("encodings of %q and %q compare %d, the namespaces %d", a, b, got, want)
			}
			isPrefix := len(b) <= len(a) && slices.Equal(a[:len(b)], b)
			if got := strings.HasPrefix(string(enc), string(encodeNamespace(b))); got != isPrefix {
				t.Errorf("encoding of %q has the encoding of %q as a prefix: %v, want %v", a, b, got, isPrefix)
			}
		}
	}
	for _, bad := range []string{"", "a", "a\x01", "a\x01\x03\x00"} {
		if ns, err := decodeNamespace([]byte(bad)); err == nil {
			t.Errorf("decodeNamespace(%q) = %q, want an error", bad, ns)
		}
	}
}

// TestSharedFile keeps the store in the file of another component.
func TestSharedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "app.db")
	other, err := sqlitedb.Open(ctx, path, "other", []sqlitedb.Migration{{Version: 1, SQL: `CREATE TABLE other (x)`}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s := open(t, path)
	if err := s.Put(ctx, []string{"a"}, "k", json.RawMessage(`1`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, err := sqlitedb.SchemaVersion(ctx, other.Read, "other"); err != nil || v != 1 {
		t.Errorf("the other component's version = %d, %v; want 1", v, err)
	}
}

func TestExpiredItemsAreDeleted(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "store.db"))
	now := time.Now()
	s.now = func() time.Time { return now }
	ns := []string{"a"}
	for _, k := range []string{"read", "swept"} {
		if err := s.Put(ctx, ns, k, json.RawMessage(`1`), store.PutOptions{TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() int {
		var n int
		if err := s.db.Read.QueryRow(`SELECT count(*) FROM store_items`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	now = now.Add(2 * time.Second)
	if _, err := s.Get(ctx, ns, "read"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an expired item: %v, want ErrNotFound", err)
	}
	if n := rows(); n != 1 {
		t.Errorf("%d rows after Get met an expired item, want 1", n)
	}
	now = now.Add(sweepEvery)
	if err := s.Put(ctx, ns, "new", json.RawMessage(`1`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Errorf("%d rows after a Put that sweeps, want 1", n)
	}
}
