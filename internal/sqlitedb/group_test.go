package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var groupMigrations = []Migration{{Version: 1, SQL: `
CREATE TABLE g (k TEXT PRIMARY KEY);
CREATE TABLE parent (id INTEGER PRIMARY KEY);
CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`}}

func openGroupTest(t *testing.T) *DB {
	t.Helper()
	return openTest(t, filepath.Join(t.TempDir(), "g.db"), groupMigrations)
}

// queued waits until n callers wait for db's write turn.
func queued(t *testing.T, db *DB, n int) {
	t.Helper()
	w := db.f.writer
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		got := len(w.queue)
		w.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("fewer than %d callers wait for the write turn", n)
}

func seen(t *testing.T, db *DB, k string) bool {
	t.Helper()
	var n int
	if err := db.Read.QueryRow(`SELECT count(*) FROM g WHERE k = ?`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// pair runs two write transactions in one group: first inserts "a" and
// commits while second, which waited for the turn, is open; second runs
// body. It returns first's Commit error (once it returned) and second's
// transaction, still open, with a channel that yields first's error.
func pair(t *testing.T, db *DB) (second *sql.Tx, firstDone <-chan error) {
	t.Helper()
	ctx := context.Background()
	first, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(`INSERT INTO g VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	began := make(chan *sql.Tx)
	go func() {
		tx, err := db.Write.BeginTx(ctx, nil)
		if err != nil {
			t.Error(err)
			close(began)
			return
		}
		began <- tx
	}()
	queued(t, db, 1)
	done := make(chan error, 1)
	go func() { done <- first.Commit() }()
	second = <-began
	if second == nil {
		t.FailNow()
	}
	return second, done
}

// TestGroupCommitReturnsAfterThePhysicalCommit checks that a member's
// Commit returns only after its group's COMMIT: not while a later member
// of the group is open, and that a reader sees the row as soon as it
// returns, never before.
func TestGroupCommitReturnsAfterThePhysicalCommit(t *testing.T) {
	db := openGroupTest(t)
	before := ReadWriteStats()
	second, firstDone := pair(t, db)
	if _, err := second.Exec(`INSERT INTO g VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the first member's Commit returned (%v) while its group was open", err)
	case <-time.After(50 * time.Millisecond):
	}
	if seen(t, db, "a") {
		t.Fatal("a reader sees the first member's row before its group committed")
	}
	if err := second.Commit(); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	if !seen(t, db, "a") || !seen(t, db, "b") {
		t.Fatal("a reader does not see both rows once both Commits returned")
	}
	if s := ReadWriteStats().Sub(before); s.Transactions != 2 || s.Commits != 1 {
		t.Errorf("stats %+v; want 2 transactions in 1 commit", s)
	}
}

// TestGroupRollbackKeepsTheOthers checks that a member that rolls back
// undoes only its own writes.
func TestGroupRollbackKeepsTheOthers(t *testing.T) {
	db := openGroupTest(t)
	second, firstDone := pair(t, db)
	if _, err := second.Exec(`INSERT INTO g VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	// A failing statement (a duplicate key) leaves the member usable.
	if _, err := second.Exec(`INSERT INTO g VALUES ('a')`); err == nil {
		t.Fatal("inserting a duplicate key succeeded")
	}
	if err := second.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	if !seen(t, db, "a") {
		t.Fatal("the first member's row is lost")
	}
	if seen(t, db, "b") {
		t.Fatal("the rolled back member's row was committed")
	}
}

// TestGroupCommitFailureFailsEveryMember makes the physical COMMIT fail
// (a deferred foreign key, checked only then) and checks that every member
// gets the error and no row of the group is kept.
func TestGroupCommitFailureFailsEveryMember(t *testing.T) {
	db := openGroupTest(t)
	second, firstDone := pair(t, db)
	if _, err := second.Exec(`INSERT INTO child VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	err2 := second.Commit()
	err1 := <-firstDone
	if err1 == nil || err2 == nil || !strings.Contains(err2.Error(), "FOREIGN KEY") {
		t.Fatalf("Commit errors %v and %v; want both, the foreign key's", err1, err2)
	}
	if seen(t, db, "a") {
		t.Fatal("a row of a group whose commit failed is visible")
	}
	// The writer is usable again.
	if _, err := db.Write.Exec(`INSERT INTO g VALUES ('c')`); err != nil {
		t.Fatal(err)
	}
	if !seen(t, db, "c") {
		t.Fatal("a write after the failed group is lost")
	}
}

// TestGroupAutocommitJoins checks that a statement outside a transaction
// waiting for the turn joins the open group and returns after its commit,
// and that a query's rows keep the member open until they are closed.
func TestGroupAutocommitJoins(t *testing.T) {
	db := openGroupTest(t)
	ctx := context.Background()
	first, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	execDone := make(chan error, 1)
	go func() {
		_, err := db.Write.Exec(`INSERT INTO g VALUES ('x')`)
		execDone <- err
	}()
	queued(t, db, 1)
	var got string
	queryDone := make(chan error, 1)
	go func() {
		queryDone <- db.Write.QueryRow(`INSERT INTO g VALUES ('y') RETURNING k`).Scan(&got)
	}()
	queued(t, db, 2)
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-execDone; err != nil {
		t.Fatal(err)
	}
	if err := <-queryDone; err != nil || got != "y" {
		t.Fatalf("query: %q, %v", got, err)
	}
	if !seen(t, db, "x") || !seen(t, db, "y") {
		t.Fatal("an autocommit statement's row is not visible once it returned")
	}
	// A failing statement in a group is its own error only.
	if _, err := db.Write.Exec(`INSERT INTO g VALUES ('x')`); err == nil {
		t.Fatal("a duplicate key was inserted")
	}
}

// TestGroupCanceledWaiter checks that a caller that stops waiting for the
// turn leaves no group open.
func TestGroupCanceledWaiter(t *testing.T) {
	db := openGroupTest(t)
	first, err := db.Write.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := db.Write.BeginTx(ctx, nil)
		waited <- err
	}()
	queued(t, db, 1)
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("BeginTx with a canceled context: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Commit() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Commit waits for a caller that left")
	}
}

// TestGroupManyWriters runs many concurrent writers and checks every row
// committed, none twice, and that groups formed.
func TestGroupManyWriters(t *testing.T) {
	db := openGroupTest(t)
	before := ReadWriteStats()
	const writers, each = 20, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				tx, err := db.Write.Begin()
				if err != nil {
					errs <- err
					return
				}
				k := fmt.Sprintf("%d-%d", i, j)
				if _, err := tx.Exec(`INSERT INTO g VALUES (?)`, k); err != nil {
					tx.Rollback()
					errs <- err
					return
				}
				if j%5 == 4 { // every fifth rolls back
					if err := tx.Rollback(); err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := tx.Commit(); err != nil {
					errs <- err
					return
				}
				var n int
				if err := db.Read.QueryRow(`SELECT count(*) FROM g WHERE k = ?`, k).Scan(&n); err != nil || n != 1 {
					errs <- fmt.Errorf("row %s is not visible after its Commit (%d, %v)", k, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := db.Read.QueryRow(`SELECT count(*) FROM g`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := writers * each * 4 / 5; n != want {
		t.Fatalf("%d rows; want %d", n, want)
	}
	s := ReadWriteStats().Sub(before)
	t.Logf("%d transactions, %d physical commits", s.Transactions, s.Commits)
	if s.Transactions != writers*each {
		t.Errorf("%d transactions counted; want %d", s.Transactions, writers*each)
	}
}

// TestGroupOfOneCommitsAtOnce checks that a lone transaction is committed
// by its own Commit, one physical commit each.
func TestGroupOfOneCommitsAtOnce(t *testing.T) {
	db := openGroupTest(t)
	before := ReadWriteStats()
	for i := range 5 {
		tx, err := db.Write.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO g VALUES (?)`, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if s := ReadWriteStats().Sub(before); s.Transactions != 5 || s.Commits != 5 {
		t.Fatalf("stats %+v; want 5 transactions, 5 commits", s)
	}
}

// TestGroupFirstMemberRollsBack checks that the first member of a group,
// which has no savepoint, undoes only its own writes when it rolls back,
// and that a caller waiting meanwhile commits in a new group.
func TestGroupFirstMemberRollsBack(t *testing.T) {
	db := openGroupTest(t)
	before := ReadWriteStats()
	ctx := context.Background()
	first, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(`INSERT INTO g VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Write.Exec(`INSERT INTO g VALUES ('b')`)
		done <- err
	}()
	queued(t, db, 1)
	if err := first.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting statement: %v", err)
	}
	if seen(t, db, "a") {
		t.Fatal("the rolled back first member's row was committed")
	}
	if !seen(t, db, "b") {
		t.Fatal("the waiting statement's row is lost")
	}
	if s := ReadWriteStats().Sub(before); s.Commits != 0 {
		// The waiter ran alone, outside any group: no group committed.
		t.Errorf("stats %+v; want no group commit", s)
	}
}

// TestGroupFirstMemberFailedStatement checks that a failed statement of a
// group's first member undoes only that statement, and that a first
// member whose transaction SQLite ended under it gets an error from
// Commit instead of a later member's commit.
func TestGroupFirstMemberFailedStatement(t *testing.T) {
	db := openGroupTest(t)
	ctx := context.Background()
	if _, err := db.Write.Exec(`INSERT INTO g VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO g VALUES ('b')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO g VALUES ('a')`); err == nil {
		t.Fatal("inserting a duplicate key succeeded")
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit after a failed statement: %v", err)
	}
	if !seen(t, db, "b") {
		t.Fatal("the row before the failed statement is lost")
	}

	// The transaction ends under the member (as SQLite ends it after an
	// I/O error or a full disk), then a statement fails.
	tx, err = db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO g VALUES ('c')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO g VALUES ('a')`); err == nil {
		t.Fatal("inserting a duplicate key succeeded")
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Write.Exec(`INSERT INTO g VALUES ('d')`)
		done <- err
	}()
	queued(t, db, 1)
	if err := tx.Commit(); !errors.Is(err, errGroupLost) {
		t.Fatalf("Commit of a member whose transaction ended: %v; want errGroupLost", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting statement: %v", err)
	}
	if seen(t, db, "c") || !seen(t, db, "d") {
		t.Fatal("want the lost member's row absent and the waiter's present")
	}
}
