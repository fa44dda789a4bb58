package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// trellis migrate creates the whole schema in a new file, and is a no-op
// the second time.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	for range 2 {
		out, err := trellis(t, "", "migrate", "--database", path)
		if err != nil || !strings.Contains(out, "is up to date") {
			t.Fatalf("migrate: %q %v", out, err)
		}
	}
	db, err := sqlitedb.Open(context.Background(), path, "probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"river_job", "trellis_runs", "checkpoints"} {
		var n int
		if err := db.Read.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: %d (%v) after migrate", table, n, err)
		}
	}
	if _, err := trellis(t, "", "migrate", "--database", "mysql://x"); err == nil {
		t.Error("migrate accepted an unsupported database")
	}
}
