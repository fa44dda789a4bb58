package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// A statement whose rows are still open is not handed out again: the same
// query inside the iteration runs on a fresh statement and both result
// sets are right.
func TestStmtCacheNestedSameQuery(t *testing.T) {
	db := openTest(t, filepath.Join(t.TempDir(), "db.sqlite"), testMigrations)
	ctx := context.Background()
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT x FROM t WHERE x >= ? ORDER BY x`
	outer, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var x int
		if err := outer.Scan(&x); err != nil {
			t.Fatal(err)
		}
		inner, err := tx.QueryContext(ctx, q, x)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for inner.Next() {
			n++
		}
		if err := errors.Join(inner.Err(), inner.Close()); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%d", x, n))
	}
	if err := errors.Join(outer.Err(), outer.Close()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1:2 2:1]" {
		t.Fatalf("nested iteration over a cached statement gave %v, want [1:2 2:1]", got)
	}
}

// More distinct statements than the cache holds all run correctly, and a
// cached statement sees a schema change made after it was prepared.
func TestStmtCacheEvictionAndSchemaChange(t *testing.T) {
	db := openTest(t, filepath.Join(t.TempDir(), "db.sqlite"), testMigrations)
	ctx := context.Background()
	for i := range stmtCacheSize * 2 {
		var v int
		if err := db.Write.QueryRowContext(ctx, fmt.Sprintf("SELECT %d + count(*) FROM t", i)).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != i+2 {
			t.Fatalf("statement %d returned %d, want %d", i, v, i+2)
		}
	}
	const q = `SELECT * FROM u`
	cols := func() int {
		rows, err := db.Write.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		c, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return len(c)
	}
	if n := cols(); n != 1 {
		t.Fatalf("u has %d columns, want 1", n)
	}
	if _, err := db.Write.ExecContext(ctx, `ALTER TABLE u ADD COLUMN z`); err != nil {
		t.Fatal(err)
	}
	if n := cols(); n != 2 {
		t.Fatalf("after ALTER TABLE the cached statement sees %d columns, want 2", n)
	}
	// A script of several statements still runs every statement each time.
	for range 2 {
		if _, err := db.Write.ExecContext(ctx, `INSERT INTO t VALUES (7); INSERT INTO t VALUES (8)`); err != nil {
			t.Fatal(err)
		}
	}
	if n := rowsOfT(t, db); n != 6 {
		t.Fatalf("t has %d rows after running a two-insert script twice, want 6", n)
	}
}

// DBs of one file share the pools; closing one leaves the others working
// and makes its own Ping fail.
func TestSharedPools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	a := openTest(t, path, testMigrations)
	b, err := Open(context.Background(), path, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Write != b.Write || a.Read != b.Read {
		t.Fatal("two DBs of one file have their own pools")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close = %v, want ErrClosed", err)
	}
	if err := a.Ping(context.Background()); err != nil {
		t.Fatalf("the other DB's Ping after one Close: %v", err)
	}
	if n := rowsOfT(t, a); n != 2 {
		t.Fatalf("t has %d rows, want 2", n)
	}
}
