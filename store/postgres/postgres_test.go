package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/postgres"
	"github.com/trellis-agents/trellis/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a Store on schema and closes it when t ends.
func open(t *testing.T, dsn, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func newStore(t *testing.T) *postgres.Store {
	t.Helper()
	dsn, schema := pgdbtest.Schema(t)
	return open(t, dsn, schema)
}

// TestLimits checks the size limit; the Stores of one test share a schema.
func TestLimits(t *testing.T) {
	type db struct{ dsn, schema string }
	dbs := map[string]db{}
	storetest.RunLimits(t, func(t *testing.T, maxBytes int) store.Store {
		d, ok := dbs[t.Name()]
		if !ok {
			d.dsn, d.schema = pgdbtest.Schema(t)
			dbs[t.Name()] = d
		}
		s, err := postgres.Open(context.Background(), d.dsn, postgres.WithSchema(d.schema), postgres.WithMaxBytes(maxBytes))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	})
}

// TestSuite runs the conformance suite with a fresh schema per subtest.
func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

// TestSuiteShared runs the suite against one Store, on one schema, shared
// by every subtest.
func TestSuiteShared(t *testing.T) {
	s := newStore(t)
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	s := open(t, dsn, schema)
	ns := []string{"users", "u1"}
	if err := s.Put(ctx, ns, "profile", json.RawMessage(`{"name":"Ada"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	it, err := open(t, dsn, schema).Get(ctx, ns, "profile")
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Value) != `{"name": "Ada"}` {
		t.Errorf("after reopening, value = %s", it.Value)
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	open(t, dsn, schema).Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (component, version) VALUES ('store', 99)`); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err == nil {
		s.Close()
		t.Fatal("Open of a schema at a future version succeeded")
	}
	if !errors.Is(err, pgdb.ErrSchemaTooNew) || !strings.Contains(err.Error(), "store") {
		t.Errorf("Open error = %v; want ErrSchemaTooNew naming the store", err)
	}
}

// TestNewWithPool uses a pool the caller owns; Close leaves it open.
func TestNewWithPool(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	pool, err := pgdb.Connect(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, []string{"a"}, "k", json.RawMessage(`1`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the pool is unusable after Store.Close: %v", err)
	}
}

// TestExpiredRowsDeleted checks that expired items do not stay in the
// table: Get deletes the one it finds, a sweep the others.
func TestExpiredRowsDeleted(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	s := open(t, dsn, schema)
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Put(ctx, []string{"ttl"}, k, json.RawMessage(`1`), store.PutOptions{TTL: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "store_items"}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := s.Get(ctx, []string{"ttl"}, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an expired item: %v", err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d rows after Get of an expired item, want 2", n)
	}
	if items, err := s.Search(ctx, nil, store.Query{}); err != nil || len(items) != 0 {
		t.Fatalf("Search = %v, %v; want nothing", items, err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d rows after the first Search swept, want 0", n)
	}
}

// TestPostgresLimits checks that what PostgreSQL cannot hold is refused
// with an error naming the item, and that prefixes compare whole elements
// even around the bytes the index range uses.
func TestPostgresLimits(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	err := s.Put(ctx, []string{"limits"}, "nul", json.RawMessage(`{"s":"a\u0000b"}`), store.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "limits/nul") {
		t.Errorf("Put of a value jsonb cannot hold: error = %v, want one naming the item", err)
	}
	for _, ns := range [][]string{{"p", "a"}, {"p", "a", "x"}, {"p", "a\x01"}, {"p", "a\x01", "y"}, {"p", "a\x02"}, {"p", "ab"}, {"p", "`"}} {
		if err := s.Put(ctx, ns, "k", json.RawMessage(`1`), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	items, err := s.Search(ctx, []string{"p", "a"}, store.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, strings.Join(it.Namespace, "/"))
	}
	if want := []string{"p/a", "p/a/x"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Search under [p a] = %q, want %q", got, want)
	}
	nss, err := s.ListNamespaces(ctx, store.NamespaceQuery{Prefix: []string{"p", "a\x01"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(nss) != 2 || len(nss[0]) != 2 || len(nss[1]) != 3 {
		t.Errorf("ListNamespaces under [p a\\x01] = %q", nss)
	}
}
