package testplanner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/tool"
)

func TestCheckReadOnly(t *testing.T) {
	allowed := []string{
		"SELECT * FROM customers",
		"select id from orders where status = 'pending';",
		"  WITH recent AS (SELECT * FROM orders WHERE created_at > '2024-09-01') SELECT count(*) FROM recent ;; ",
		"SELECT 'DELETE FROM orders; DROP TABLE x' AS harmless",
		`SELECT "update" FROM (SELECT 1 AS "update")`,
		"SELECT replace(name, 'a', 'b') FROM products",
		"SELECT updated_at, created_at FROM orders -- DELETE in a comment\n",
		"/* DROP TABLE orders; */ SELECT 1",
		"SELECT CASE WHEN stock = 0 THEN 'empty' ELSE 'ok' END FROM products",
		"EXPLAIN QUERY PLAN SELECT * FROM orders WHERE customer_id = 1",
		"VALUES (1), (2)",
		"PRAGMA table_info(orders)",
		"SELECT * FROM pragma_table_info('orders')",
		"SELECT 19.99 * 2, 'it''s; fine'",
	}
	for _, q := range allowed {
		if err := CheckReadOnly(q); err != nil {
			t.Errorf("CheckReadOnly(%q) = %v, want nil", q, err)
		}
	}
	refused := []struct{ q, why string }{
		{"DELETE FROM orders", "DELETE is not a read statement"},
		{"UPDATE products SET stock = 0", "UPDATE is not a read statement"},
		{"DROP TABLE payments", "DROP is not a read statement"},
		{"INSERT INTO customers (id) VALUES (99)", "INSERT is not a read statement"},
		{"REPLACE INTO customers (id) VALUES (1)", "REPLACE is not a read statement"},
		{"SELECT * FROM orders; DELETE FROM orders", "goes on after a semicolon (DELETE FROM ...)"},
		{"SELECT 1; SELECT 2", "only one statement"},
		{"WITH gone AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN gone", "contains DELETE"},
		{"WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", "contains INSERT"},
		{"EXPLAIN DELETE FROM orders", "DELETE is not a read statement"},
		{"ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH is not a read statement"},
		{"PRAGMA query_only = 0", "only PRAGMA table_info"},
		{"PRAGMA table_info = 1", "PRAGMA assignments"},
		{"PRAGMA writable_schema", "only PRAGMA table_info"},
		{"SELECT load_extension('evil')", "contains LOAD_EXTENSION"},
		{"BEGIN; DELETE FROM orders; COMMIT", "only one statement"},
		{"BEGIN", "BEGIN is not a read statement"},
		{"VACUUM", "VACUUM is not a read statement"},
		{"", "empty"},
		{"  ;  ", "empty"},
		{"-- only a comment", "empty"},
		{"SELECT 'unterminated", "never closed"},
		{"SELECT 1 /* open", "never closed"},
	}
	for _, c := range refused {
		err := CheckReadOnly(c.q)
		if !errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("CheckReadOnly(%q) = %v, want a refusal saying %q", c.q, err, c.why)
		}
	}
}

// fingerprint summarises every table of the sample database, so a test can
// tell whether anything changed.
func fingerprint(t *testing.T, db Database) string {
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

func TestSQLiteDBRefusesWritesAndStaysUnchanged(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shop.db")
	if created, err := CreateSampleDB(ctx, path); err != nil || !created {
		t.Fatalf("CreateSampleDB = %v, %v", created, err)
	}
	if created, err := CreateSampleDB(ctx, path); err != nil || created {
		t.Fatalf("second CreateSampleDB = %v, %v; want the file left alone", created, err)
	}
	db, err := OpenReadOnly(ctx, path)
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
		"DROP TABLE customers",
		"INSERT INTO products (id, sku, name, category, price, stock) VALUES (99, 'X', 'x', 'home', 1, 1)",
		"SELECT count(*) FROM orders; DELETE FROM orders",
		"ATTACH DATABASE 'other.db' AS other",
		"PRAGMA query_only = 0",
	} {
		if _, err := db.Query(ctx, q, 10); !errors.Is(err, ErrNotReadOnly) {
			t.Errorf("Query(%q) = %v, want a refusal", q, err)
		}
	}
	// The second guard: even a write that skipped the check fails in
	// SQLite, because the file is opened read-only with query_only.
	if _, err := db.db.ExecContext(ctx, "DELETE FROM orders"); err == nil {
		t.Error("a raw DELETE on the read-only connection succeeded")
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
	rows, err = db.Query(ctx, "SELECT id, paid_at FROM payments ORDER BY id", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Truncated || len(rows.Rows) != 3 || !strings.Contains(rows.Render(), "(first 3 rows only") {
		t.Errorf("a limited query: truncated %v, %d rows, %q", rows.Truncated, len(rows.Rows), rows.Render())
	}
	rows, err = db.Query(ctx, "SELECT paid_at FROM payments WHERE id = 506", 3)
	if err != nil || rows.Rows[0][0] != nil || rows.Render() != "paid_at\nNULL\n(1 row)" {
		t.Errorf("NULL: %v, %q", err, rows.Render())
	}
	if _, err := db.Query(ctx, "SELECT nope FROM customers", 3); err == nil || errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), "no such column") {
		t.Errorf("a bad column: %v, want SQLite's error", err)
	}

	if _, err := OpenReadOnly(ctx, filepath.Join(t.TempDir(), "missing.db")); err == nil || !strings.Contains(err.Error(), "does the file exist") {
		t.Errorf("opening a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "missing.db")); err == nil {
		t.Error("opening read-only created a file")
	}
}

func TestSQLToolRefusesWrites(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	before := fingerprint(t, e.db)
	tl := SQLTool(e.db, 5)
	if info := tl.Info(); info.Name != SQLToolName || !info.ReadOnly {
		t.Fatalf("info = %+v", info)
	}
	out, err := tl.Call(ctx, json.RawMessage(`{"sql":"SELECT email FROM customers WHERE id = 3"}`))
	if err != nil || !strings.Contains(out, "mei.tanaka@example.com") {
		t.Fatalf("a read: %q, %v", out, err)
	}
	for _, q := range []string{"DELETE FROM customers", "SELECT 1; UPDATE products SET stock = 0", "DROP TABLE orders"} {
		args, _ := json.Marshal(map[string]string{"sql": q})
		_, err := tl.Call(ctx, args)
		if !tool.IsArgumentError(err) || !errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: err = %v, want an argument error saying the database is read-only", q, err)
		}
	}
	if after := fingerprint(t, e.db); after != before {
		t.Fatal("the database changed")
	}
}
