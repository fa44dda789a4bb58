package sqlread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// pgDB fills a fresh schema (dropped at the end) and opens it read-only.
func pgDB(t testing.TB) *PostgresDB {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.Name(t, fmt.Sprint(time.Now().UnixNano()%1e9), pgdb.MaxIdentifierLen)
	pool, err := pgdb.Connect(t.Context(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
		pool.Close()
	})
	if _, err := pool.Exec(t.Context(), `
		CREATE TABLE authors (id int PRIMARY KEY, name text NOT NULL);
		CREATE TABLE books (id int PRIMARY KEY, author_id int REFERENCES authors (id), title text, note text);
		CREATE SEQUENCE counter;
		INSERT INTO authors VALUES (1, 'Ann');
		INSERT INTO books VALUES (1, 1, 'First', repeat('x', 10000)), (2, 1, 'Second', NULL);`); err != nil {
		t.Fatal(err)
	}
	db, err := OpenPostgres(t.Context(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestPostgresReadsTablesAndRows(t *testing.T) {
	db := pgDB(t)
	ts, err := db.Tables(t.Context())
	if err != nil || len(ts) != 2 || ts[0].Name != "authors" || ts[1].Name != "books" {
		t.Fatalf("Tables = %+v, %v", ts, err)
	}
	for _, want := range []string{`"author_id" integer`, "PRIMARY KEY (id)", "FOREIGN KEY (author_id) REFERENCES authors(id)"} {
		if !strings.Contains(ts[1].SQL, want) {
			t.Errorf("books' definition lacks %q:\n%s", want, ts[1].SQL)
		}
	}
	rows, err := db.Query(t.Context(), "SELECT id, title, note FROM books ORDER BY id", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != 1 || !rows.Truncated || *rows.Rows[0][1] != "First" || rows.CutValues != 1 || len(*rows.Rows[0][2]) > DefaultMaxValueBytes+4 {
		t.Errorf("rows %+v: want one row, truncated, the long note cut", rows)
	}
	if db.Dialect() != PostgreSQL || Dialect(db) != PostgreSQL {
		t.Errorf("dialect %q", db.Dialect())
	}
}

// Writes are refused twice: by CheckReadOnly before the server, and by
// the read-only transaction for what the check cannot see (a function
// that writes).
func TestPostgresRefusesWrites(t *testing.T) {
	db := pgDB(t)
	if _, err := db.Query(t.Context(), "DELETE FROM books", 10); !errors.Is(err, ErrNotReadOnly) {
		t.Errorf("DELETE: %v", err)
	}
	_, err := db.Query(t.Context(), "SELECT nextval('counter')", 10)
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("nextval: %v; want PostgreSQL's read-only refusal", err)
	}
	if _, err := db.Query(t.Context(), "SELECT * FROM books FOR UPDATE", 10); err == nil {
		t.Error("SELECT ... FOR UPDATE ran")
	}
	// The connection is still usable, and nothing changed.
	rows, err := db.Query(t.Context(), "SELECT count(*) FROM books", 1)
	if err != nil || *rows.Rows[0][0] != "2" {
		t.Errorf("count after refusals: %v, %v", rows, err)
	}
}

func TestPostgresValidate(t *testing.T) {
	db := pgDB(t)
	plan, err := Validate(t.Context(), db, "SELECT title FROM books WHERE id = 1")
	if err != nil || !strings.Contains(plan, "books") {
		t.Errorf("plan %q, %v", plan, err)
	}
	if _, err := Validate(t.Context(), db, "SELECT nope FROM books"); err == nil || !strings.Contains(err.Error(), `column "nope" does not exist`) {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := Validate(t.Context(), db, "EXPLAIN SELECT 1"); !errors.Is(err, ErrExplain) {
		t.Errorf("EXPLAIN: %v", err)
	}
	if _, err := Validate(t.Context(), db, "UPDATE books SET title = ''"); !errors.Is(err, ErrNotReadOnly) {
		t.Errorf("UPDATE: %v", err)
	}
}

// Figures for the report: one guarded read and one validation on the
// local PostgreSQL (each a read-only transaction, rolled back).
func BenchmarkPostgresQuery(b *testing.B) {
	db := pgDB(b)
	for b.Loop() {
		if _, err := db.Query(b.Context(), "SELECT id, title FROM books ORDER BY id", 10); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPostgresValidate(b *testing.B) {
	db := pgDB(b)
	for b.Loop() {
		if _, err := db.Validate(b.Context(), "SELECT a.name, count(*) FROM authors a JOIN books b ON b.author_id = a.id GROUP BY a.name"); err != nil {
			b.Fatal(err)
		}
	}
}
