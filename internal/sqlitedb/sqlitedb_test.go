package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var testMigrations = []Migration{
	{Version: 1, SQL: `CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)`},
	{Version: 2, SQL: `INSERT INTO t VALUES (2); CREATE TABLE u (y)`},
}

func openTest(t *testing.T, path string, migrations []Migration) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, "test", migrations)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func rowsOfT(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.Read.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOpenMigratesOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "b", "db.sqlite")
	db := openTest(t, path, testMigrations[:1])
	if v, err := SchemaVersion(ctx, db.Read, "test"); err != nil || v != 1 {
		t.Fatalf("SchemaVersion = %d, %v; want 1", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Reopening applies only the new step; every step ran once.
	db = openTest(t, path, testMigrations)
	if v, err := SchemaVersion(ctx, db.Read, "test"); err != nil || v != 2 {
		t.Fatalf("SchemaVersion after reopening = %d, %v; want 2", v, err)
	}
	if n := rowsOfT(t, db); n != 2 {
		t.Errorf("table t has %d rows, want 2: a migration ran twice or not at all", n)
	}
	db2 := openTest(t, path, testMigrations)
	if n := rowsOfT(t, db2); n != 2 {
		t.Errorf("table t has %d rows after a third Open, want 2", n)
	}
	var mode string
	if err := db.Write.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	for _, p := range []string{"foreign_keys", "synchronous", "busy_timeout"} {
		for _, pool := range []struct {
			name string
			q    interface {
				QueryRow(string, ...any) *sql.Row
			}
		}{{"write", db.Write}, {"read", db.Read}} {
			var v int
			if err := pool.q.QueryRow(`PRAGMA ` + p).Scan(&v); err != nil {
				t.Fatal(err)
			}
			want := map[string]int{"foreign_keys": 1, "synchronous": 1, "busy_timeout": int(BusyTimeout.Milliseconds())}[p]
			if v != want {
				t.Errorf("%s pool: PRAGMA %s = %d, want %d", pool.name, p, v, want)
			}
		}
	}
}

func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	const openers = 6
	dbs := make([]*DB, openers)
	errs := make([]error, openers)
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() { dbs[i], errs[i] = Open(context.Background(), path, "test", testMigrations) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	if n := rowsOfT(t, dbs[0]); n != 2 {
		t.Errorf("table t has %d rows after concurrent Opens, want 2", n)
	}
}

func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	openTest(t, path, testMigrations).Close()
	_, err := Open(context.Background(), path, "test", testMigrations[:1])
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open with fewer migrations than applied: error = %v, want ErrNewerSchema", err)
	}
	for _, part := range []string{path, "test", "version 2", "up to 1"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	// Another component of the same file is not concerned.
	other, err := Open(context.Background(), path, "other", []Migration{{Version: 1, SQL: `CREATE TABLE other (z)`}})
	if err != nil {
		t.Fatalf("Open of another component: %v", err)
	}
	other.Close()
}

func TestBadMigrations(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := Open(ctx, filepath.Join(dir, "a.db"), "test", []Migration{{Version: 2, SQL: `SELECT 1`}}); err == nil {
		t.Error("Open with a migration numbered 2 first succeeded")
	}
	path := filepath.Join(dir, "b.db")
	bad := []Migration{testMigrations[0], {Version: 2, SQL: `INSERT INTO t VALUES (3); THIS IS NOT SQL`}}
	if _, err := Open(ctx, path, "test", bad); err == nil || !strings.Contains(err.Error(), "migration 2") {
		t.Errorf("Open with a failing migration: error = %v, want one naming migration 2", err)
	}
	// The failed step left nothing behind.
	db := openTest(t, path, testMigrations[:1])
	if n := rowsOfT(t, db); n != 1 {
		t.Errorf("table t has %d rows after a failed migration, want 1", n)
	}
	if _, err := Open(ctx, "", "test", nil); err == nil {
		t.Error("Open with an empty path succeeded")
	}
}

func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag", "db %41.sqlite")
	db := openTest(t, path, testMigrations)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
	n, err := db.Size()
	if err != nil || n == 0 {
		t.Errorf("Size = %d, %v", n, err)
	}
}

func TestCommittedCheckpoints(t *testing.T) {
	db := openTest(t, filepath.Join(t.TempDir(), "db.sqlite"), testMigrations)
	for i := range 3 * checkpointEvery {
		if _, err := db.Write.Exec(`INSERT INTO t VALUES (?)`, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		db.Committed()
	}
	if n := rowsOfT(t, db); n != 2+3*checkpointEvery {
		t.Errorf("table t has %d rows", n)
	}
}
