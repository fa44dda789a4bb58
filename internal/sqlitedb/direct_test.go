package sqlitedb

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteTxCommitsAndRollsBack checks that WriteTx commits fn's writes
// when fn returns nil, undoes them when it returns an error or panics,
// and leaves the write turn free in every case.
func TestWriteTxCommitsAndRollsBack(t *testing.T) {
	db := openGroupTest(t)
	ctx := context.Background()
	err := db.WriteTx(ctx, func(d *Direct) error {
		n, err := d.Exec(`INSERT INTO g VALUES (?), (?)`, "a", "b")
		if err == nil && n != 2 {
			t.Errorf("Exec changed %d rows; want 2", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen(t, db, "a") || !seen(t, db, "b") {
		t.Fatal("a committed WriteTx's rows are not visible")
	}
	boom := errors.New("boom")
	err = db.WriteTx(ctx, func(d *Direct) error {
		if _, err := d.Exec(`INSERT INTO g VALUES (?)`, "c"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteTx returned %v; want fn's error", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("fn's panic did not reach the caller")
			}
		}()
		db.WriteTx(ctx, func(d *Direct) error {
			d.Exec(`INSERT INTO g VALUES (?)`, "d")
			panic("fn panics")
		})
	}()
	if seen(t, db, "c") || seen(t, db, "d") {
		t.Fatal("a rolled back WriteTx's row was committed")
	}
	// A failed statement leaves the transaction usable.
	err = db.WriteTx(ctx, func(d *Direct) error {
		if _, err := d.Exec(`INSERT INTO g VALUES (?)`, "a"); err == nil {
			t.Error("inserting a duplicate key succeeded")
		}
		_, err := d.Exec(`INSERT INTO g VALUES (?)`, "e")
		return err
	})
	if err != nil || !seen(t, db, "e") {
		t.Fatalf("WriteTx after a failed statement: %v", err)
	}
	// The turn is free: a Write pool transaction begins at once.
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tx, err := db.Write.BeginTx(tctx, nil)
	if err != nil {
		t.Fatalf("BeginTx after WriteTx: %v", err)
	}
	tx.Rollback()
}

// TestWriteTxJoinsGroup checks that a WriteTx waiting for the turn joins
// the open group as a member with a savepoint: its rollback keeps the
// first member's row, and a commit returns after the group's COMMIT.
func TestWriteTxJoinsGroup(t *testing.T) {
	db := openGroupTest(t)
	before := ReadWriteStats()
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		first, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := map[bool]string{false: "a", true: "b"}[commit]
		if _, err := first.Exec(`INSERT INTO g VALUES (?)`, k+"1"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- db.WriteTx(ctx, func(d *Direct) error {
				if _, err := d.Exec(`INSERT INTO g VALUES (?)`, k+"2"); err != nil {
					return err
				}
				if !commit {
					return errors.New("roll back")
				}
				return nil
			})
		}()
		queued(t, db, 1)
		if err := first.Commit(); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if commit != (err == nil) {
			t.Fatalf("WriteTx (commit %v): %v", commit, err)
		}
		if !seen(t, db, k+"1") || seen(t, db, k+"2") != commit {
			t.Fatalf("rows after a group with a WriteTx member (commit %v): first %v, second %v", commit, seen(t, db, k+"1"), seen(t, db, k+"2"))
		}
	}
	if s := ReadWriteStats().Sub(before); s.Transactions != 4 || s.Commits != 2 {
		t.Errorf("stats %+v; want 4 transactions in 2 commits", s)
	}
}

// TestWriteTxClosed checks that WriteTx on a closed DB fails with
// ErrClosed.
func TestWriteTxClosed(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), "test", groupMigrations)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	err = db.WriteTx(context.Background(), func(*Direct) error { return nil })
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("WriteTx after Close: %v; want ErrClosed", err)
	}
}
