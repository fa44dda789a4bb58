package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
)

// blockOn opens a transaction that runs stmt (on the thread ten/th),
// and returns it with its backend's process ID, for a test to make
// another statement wait for it.
func blockOn(t *testing.T, d *DB, stmt string, args ...any) (pgx.Tx, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, stmt, args...); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// waitBlocked returns once a backend waits for a lock pid holds (or
// fails the test after a minute: the statement did not wait at all).
func waitBlocked(t *testing.T, d *DB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := d.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing waited for backend %d", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// acceptAsync runs CreateRunTx (creating thread when it is not nil) in a
// transaction of its own, in a goroutine, and returns its outcome.
func acceptAsync(d *DB, ten string, thread *db.Thread, r db.Run) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		done <- d.InTx(ctx, func(tx any) error {
			_, err := d.CreateRunTx(ctx, tx, ten, thread, r)
			return err
		})
	}()
	return done
}

// TestAcceptRacesDelete: an accept and a delete of the run's thread, on
// PostgreSQL where they run at once, never leave a run without its
// thread nor lose one: an accept that finds the thread's delete under
// way waits for it, then finds no thread (ErrNotFound) or, asked to
// create it, creates it anew; a delete that comes while an accept holds
// the thread waits until the run is in and deletes it with the thread;
// an accept that creates a thread another transaction is inserting waits
// for it and stores its run on that thread.
func TestAcceptRacesDelete(t *testing.T) {
	ctx := context.Background()
	d, _, _ := OpenSeeded(t, 0)
	const ten = "race"
	kw := json.RawMessage(`{"input":{}}`)
	mk := func(id string) {
		t.Helper()
		if _, err := d.CreateThread(ctx, ten, db.Thread{ID: id, Metadata: db.Metadata{"v": "old"}}, db.IfExistsRaise); err != nil {
			t.Fatal(err)
		}
	}
	del := `DELETE FROM trellis_threads WHERE tenant = $1 AND thread_id = $2`

	t.Run("delete first", func(t *testing.T) {
		mk("d1")
		tx, pid := blockOn(t, d, del, ten, "d1")
		done := acceptAsync(d, ten, nil, db.Run{ID: "d1-run", ThreadID: "d1", AssistantID: "a", Kwargs: kw})
		waitBlocked(t, d, pid)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, db.ErrNotFound) {
			t.Errorf("accept on a thread deleted meanwhile: %v, want ErrNotFound", err)
		}
		if _, err := d.GetRun(ctx, ten, "", "d1-run"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("the refused run: %v, want ErrNotFound", err)
		}
	})

	t.Run("delete first, thread to create", func(t *testing.T) {
		mk("d2")
		tx, pid := blockOn(t, d, del, ten, "d2")
		done := acceptAsync(d, ten, &db.Thread{ID: "d2", Metadata: db.Metadata{"v": "new"}},
			db.Run{ID: "d2-run", ThreadID: "d2", AssistantID: "a", Kwargs: kw})
		waitBlocked(t, d, pid)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("accept creating a thread deleted meanwhile: %v", err)
		}
		th, err := d.GetThread(ctx, ten, "d2")
		if err != nil || th.Metadata["v"] != "new" {
			t.Errorf("the thread is %+v (%v), want it created anew", th, err)
		}
		if r, err := d.GetRun(ctx, ten, "d2", "d2-run"); err != nil || r.Status != db.RunPending {
			t.Errorf("the run is %+v (%v), want it pending on its thread", r, err)
		}
	})

	t.Run("accept first", func(t *testing.T) {
		mk("d3")
		in := make(chan int)
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- d.InTx(ctx, func(tx any) error {
				if _, err := d.CreateRunTx(ctx, tx, ten, nil, db.Run{ID: "d3-run", ThreadID: "d3", AssistantID: "a", Kwargs: kw}); err != nil {
					close(in)
					return err
				}
				var pid int
				if err := tx.(pgx.Tx).QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
					close(in)
					return err
				}
				in <- pid
				<-release
				return nil
			})
		}()
		pid, accepted := <-in
		if !accepted {
			t.Fatalf("accept: %v", <-done)
		}
		deleted := make(chan error, 1)
		go func() { deleted <- d.DeleteThread(ctx, ten, "d3") }()
		waitBlocked(t, d, pid)
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("accept: %v", err)
		}
		if err := <-deleted; err != nil {
			t.Fatalf("DeleteThread after the accept: %v", err)
		}
		if _, err := d.GetRun(ctx, ten, "", "d3-run"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("the run of the deleted thread: %v, want ErrNotFound (deleted with it)", err)
		}
	})

	t.Run("insert first, thread to create", func(t *testing.T) {
		tx, pid := blockOn(t, d, `INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error,
			created_at, updated_at, ttl_us, ttl_strategy, expires_at)
			VALUES ($1, $2, 'idle', '{"v": "theirs"}', NULL, '{}', '', now(), now(), NULL, '', NULL)`, ten, "d4")
		done := acceptAsync(d, ten, &db.Thread{ID: "d4", Metadata: db.Metadata{"v": "ours"}},
			db.Run{ID: "d4-run", ThreadID: "d4", AssistantID: "a", Kwargs: kw})
		waitBlocked(t, d, pid)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("accept creating a thread another transaction inserted meanwhile: %v", err)
		}
		th, err := d.GetThread(ctx, ten, "d4")
		if err != nil || th.Metadata["v"] != "theirs" {
			t.Errorf("the thread is %+v (%v), want the other transaction's", th, err)
		}
		if r, err := d.GetRun(ctx, ten, "d4", "d4-run"); err != nil || r.Status != db.RunPending {
			t.Errorf("the run is %+v (%v), want it pending on the thread", r, err)
		}
	})
}
