package testplanner

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
)

// fingerprint summarises every table of the sample database, so a test can
// tell whether anything changed.
func fingerprint(t *testing.T, db sqlread.Database) string {
	t.Helper()
	var parts []string
	for _, q := range []string{
		"SELECT count(*), sum(length(name || email || status)) FROM customers",
		"SELECT count(*), sum(stock), sum(price), sum(active) FROM products",
		"SELECT count(*), sum(total), group_concat(status) FROM orders",
		"SELECT count(*), sum(quantity) FROM order_items",
		"SELECT count(*), sum(amount), group_concat(status) FROM payments",
		"SELECT count(*) FROM sqlite_schema",
	} {
		rows, err := db.Query(t.Context(), q, 1)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, rows.Render())
	}
	return strings.Join(parts, "\n")
}

// The sample shop database is created once, read through the shared
// read-only layer, and refuses writes.
func TestSampleDB(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shop.db")
	if created, err := CreateSampleDB(ctx, path); err != nil || !created {
		t.Fatalf("CreateSampleDB = %v, %v", created, err)
	}
	if created, err := CreateSampleDB(ctx, path); err != nil || created {
		t.Fatalf("second CreateSampleDB = %v, %v; want the file left alone", created, err)
	}
	db, err := sqlread.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := fingerprint(t, db)

	tables, err := db.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
		if !strings.HasPrefix(tb.SQL, "CREATE TABLE") {
			t.Errorf("table %s has definition %q", tb.Name, tb.SQL)
		}
	}
	if got := strings.Join(names, ","); got != "customers,order_items,orders,payments,products" {
		t.Errorf("tables = %s", got)
	}
	for _, q := range []string{
		"DELETE FROM orders",
		"UPDATE payments SET status = 'refunded'",
		"INSERT INTO products (id, sku, name, category, price, stock) VALUES (99, 'X', 'x', 'home', 1, 1)",
	} {
		if _, err := db.Query(ctx, q, 10); !errors.Is(err, sqlread.ErrNotReadOnly) {
			t.Errorf("Query(%q) = %v, want a refusal", q, err)
		}
	}
	if after := fingerprint(t, db); after != before {
		t.Fatalf("the database changed:\nbefore %s\nafter %s", before, after)
	}

	rows, err := db.Query(ctx, "SELECT id, name, price, stock FROM products WHERE id IN (3, 4) ORDER BY id", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := "id | name | price | stock\n3 | Green tea, 100 g | 6.75 | 120\n4 | Desk lamp | 45 | 0\n(2 rows)"
	if got := rows.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	rows, err = db.Query(ctx, "SELECT paid_at FROM payments WHERE id = 506", 3)
	if err != nil || rows.Rows[0][0] != nil || rows.Render() != "paid_at\nNULL\n(1 row)" {
		t.Errorf("NULL: %v, %q", err, rows.Render())
	}
}

// TestScriptServesManyThreads: one scripted model and one App plan for
// several threads, each to the end.
func TestScriptServesManyThreads(t *testing.T) {
	ctx := t.Context()
	app, err := New(ctx, Config{Model: ScriptedModel(), Database: filepath.Join(t.TempDir(), SampleFile), Sample: true, Project: "shop", Environment: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	st := store.NewMemory()
	for _, thread := range []string{"t1", "t2"} {
		res, err := app.Graph.Invoke(apps.WithScope(ctx, thread), app.Input(""), graph.WithStore(st))
		if err != nil {
			t.Fatalf("%s: %v", thread, err)
		}
		if n := len(Plans(res.State)); n != 7 {
			t.Errorf("%s: %d plans, want 7", thread, n)
		}
	}
}

// Two builds of the app at once (the web page asks for an assistant's
// graph and its schemas together) both create the sample database: each
// writes its own temporary file, so neither breaks the other's.
func TestCreateSampleDBConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", SampleFile)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := CreateSampleDB(t.Context(), path)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("CreateSampleDB: %v", err)
		}
	}
	alone := filepath.Join(t.TempDir(), SampleFile)
	if _, err := CreateSampleDB(t.Context(), alone); err != nil {
		t.Fatal(err)
	}
	fp := func(p string) string {
		db, err := sqlread.OpenReadOnly(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return fingerprint(t, db)
	}
	if got, want := fp(path), fp(alone); got != want {
		t.Errorf("the database built concurrently holds\n%s\nwant\n%s", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
