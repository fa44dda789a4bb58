package sqlread

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// fixture creates a small database at a temporary path with a writable
// connection (closed before returning) and returns the path.
func fixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "club.db")
	w, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, q := range []string{
		`CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, note TEXT)`,
		`CREATE TABLE "odd ""name""" (id INTEGER PRIMARY KEY, label TEXT)`,
		`INSERT INTO members VALUES (1, 'Ana Ruiz', 'ana@example.com', NULL), (2, 'Bo Lind', 'bo@example.com', 'likes chess'),
			(3, 'Chen Wei', 'chen@example.com', 'multi
line'), (4, 'Dara Okafor', 'dara@example.com', NULL), (5, 'Eli Moss', 'eli@example.com', NULL)`,
		`INSERT INTO "odd ""name""" VALUES (1, 'one')`,
	} {
		if _, err := w.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

// fingerprint summarises every table of the fixture, so a test can tell
// whether anything changed.
func fingerprint(t *testing.T, db Database) string {
	t.Helper()
	var parts []string
	for _, q := range []string{
		"SELECT count(*), group_concat(name || email || coalesce(note, '-')) FROM members",
		`SELECT count(*), group_concat(label) FROM "odd ""name"""`,
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

func open(t *testing.T) *SQLiteDB {
	t.Helper()
	db, err := OpenReadOnly(t.Context(), fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLiteDBRefusesWritesAndStaysUnchanged(t *testing.T) {
	ctx := t.Context()
	db := open(t)
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
	if got := strings.Join(names, ","); got != `members,odd "name"` {
		t.Errorf("tables = %s", got)
	}

	for _, q := range []string{
		"DELETE FROM members",
		"UPDATE members SET email = 'x'",
		"DROP TABLE members",
		"INSERT INTO members (id, name, email) VALUES (99, 'x', 'x')",
		"SELECT count(*) FROM members; DELETE FROM members",
		"ATTACH DATABASE 'other.db' AS other",
		"PRAGMA query_only = 0",
	} {
		if _, err := db.Query(ctx, q, 10); !errors.Is(err, ErrNotReadOnly) {
			t.Errorf("Query(%q) = %v, want a refusal", q, err)
		}
	}
	// The second guard: even a write that skipped the check fails in
	// SQLite, because the file is opened read-only with query_only.
	if _, err := db.db.ExecContext(ctx, "DELETE FROM members"); err == nil {
		t.Error("a raw DELETE on the read-only connection succeeded")
	}
	if after := fingerprint(t, db); after != before {
		t.Fatalf("the database changed:\nbefore %s\nafter %s", before, after)
	}

	rows, err := db.Query(ctx, "SELECT id, name, note FROM members WHERE id IN (1, 3) ORDER BY id", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := "id | name | note\n1 | Ana Ruiz | NULL\n3 | Chen Wei | multi line\n(2 rows)"
	if got := rows.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
	if rows.Rows[0][2] != nil {
		t.Errorf("a NULL came back as %q", *rows.Rows[0][2])
	}
	rows, err = db.Query(ctx, "SELECT id FROM members ORDER BY id", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Truncated || len(rows.Rows) != 3 || !strings.Contains(rows.Render(), "(first 3 rows only") {
		t.Errorf("a limited query: truncated %v, %d rows, %q", rows.Truncated, len(rows.Rows), rows.Render())
	}
	rows, err = db.Query(ctx, "SELECT 19.5, x'00ff', 'Ana'", 1)
	if err != nil || rows.Render() != "19.5 | x'00ff' | 'Ana'\n19.5 | x'00ff' | Ana\n(1 row)" {
		t.Errorf("values: %v, %q", err, rows.Render())
	}
	if _, err := db.Query(ctx, "SELECT nope FROM members", 3); err == nil || errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), "no such column") {
		t.Errorf("a bad column: %v, want SQLite's error", err)
	}
	rows, err = db.Query(ctx, "SELECT * FROM "+QuoteIdent(`odd "name"`), 5)
	if err != nil || rows.Render() != "id | label\n1 | one\n(1 row)" {
		t.Errorf("a quoted table name: %v, %v", err, rows)
	}

	dir := t.TempDir()
	if _, err := OpenReadOnly(ctx, filepath.Join(dir, "missing.db")); err == nil || !strings.Contains(err.Error(), "does the file exist") {
		t.Errorf("opening a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("opening read-only created a file")
	}
}

func TestSQLToolRefusesWrites(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	before := fingerprint(t, db)
	tl := SQLTool(db, 5)
	if info := tl.Info(); info.Name != SQLToolName || !info.ReadOnly {
		t.Fatalf("info = %+v", info)
	}
	out, err := tl.Call(ctx, json.RawMessage(`{"sql":"SELECT email FROM members WHERE id = 3"}`))
	if err != nil || !strings.Contains(out, "chen@example.com") {
		t.Fatalf("a read: %q, %v", out, err)
	}
	for _, q := range []string{"DELETE FROM members", "SELECT 1; UPDATE members SET name = ''", "DROP TABLE members"} {
		args, _ := json.Marshal(map[string]string{"sql": q})
		_, err := tl.Call(ctx, args)
		if !tool.IsArgumentError(err) || !errors.Is(err, ErrNotReadOnly) || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: err = %v, want an argument error saying the database is read-only", q, err)
		}
	}
	if _, err := tl.Call(ctx, json.RawMessage(`{"sql":"SELECT nope FROM members"}`)); err == nil || tool.IsArgumentError(err) || !strings.Contains(err.Error(), "no such column") {
		t.Errorf("a bad column: %v, want SQLite's error as a tool failure", err)
	}
	if after := fingerprint(t, db); after != before {
		t.Fatal("the database changed")
	}
}
