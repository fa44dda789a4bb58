package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// A real SQLITE_FULL — the file may not grow past its current pages
// (PRAGMA max_page_count on the write connection) — is a *db.StorageError
// wrapping db.ErrStorageFull and naming the file, not an unclassified
// error; once room is made, writes succeed again.
func TestFullDatabaseIsAStorageError(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.db")
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var pages int
	if err := d.sq.Write.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.sq.Write.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	big := db.Metadata{"pad": strings.Repeat("x", 64<<10)}
	var werr error
	for i := 0; i < 50 && werr == nil; i++ {
		_, werr = d.CreateThread(ctx, "acme", db.Thread{ID: fmt.Sprintf("t%d", i), Metadata: big}, db.IfExistsRaise)
	}
	if !errors.Is(werr, db.ErrStorageFull) {
		t.Fatalf("write on a full database: %v; want db.ErrStorageFull", werr)
	}
	se, ok := db.AsStorage(werr)
	if !ok || !strings.Contains(se.Error(), path) || se.Advice() == "" || strings.Contains(se.Advice(), path) {
		t.Errorf("storage error %v: want the file named in the error and not in the advice (%q)", werr, se.Advice())
	}
	if _, err := d.sq.Write.ExecContext(ctx, `PRAGMA max_page_count = 1000000`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateThread(ctx, "acme", db.Thread{ID: "after"}, db.IfExistsRaise); err != nil {
		t.Errorf("write after room was made: %v", err)
	}
}
