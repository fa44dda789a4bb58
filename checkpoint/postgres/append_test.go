package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
)

// TestAppendTakesTaskLock checks that AppendWrites, whose lock is a
// condition inside its one INSERT, waits for the task's advisory lock
// (which PutWrites holds while it replaces the task's writes) before it
// inserts, with one write and with several.
func TestAppendTakesTaskLock(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	s, err := Open(ctx, dsn, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ref, err := s.Put(ctx, checkpoint.Ref{ThreadID: "t"}, checkpoint.Checkpoint{ID: checkpoint.NewID(), Created: time.Now()}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint(n, " writes"), func(t *testing.T) {
			task := fmt.Sprint("task-", n)
			holder, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = holder.Rollback(ctx) }()
			if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, writesLockKey(ref, task)); err != nil {
				t.Fatal(err)
			}
			var ws []checkpoint.PendingWrite
			for i := range n {
				ws = append(ws, checkpoint.PendingWrite{Index: i, Key: checkpoint.WriteStep, Value: json.RawMessage(`1`)})
			}
			done := make(chan error, 1)
			go func() { done <- s.AppendWrites(ctx, ref, task, ws) }()
			// The append must come to wait for the advisory lock; until
			// it does, it must not have returned.
			deadline := time.Now().Add(30 * time.Second)
			for {
				var waiting bool
				if err := holder.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND NOT granted
	AND (classid::bigint << 32 | objid::bigint) = hashtextextended($1, 0))`, writesLockKey(ref, task)).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("AppendWrites returned (err = %v) while another transaction held the task's lock", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("AppendWrites never waited for the task's lock")
				}
				time.Sleep(10 * time.Millisecond)
			}
			var stored int
			if err := holder.QueryRow(ctx, `SELECT count(*) FROM checkpoint_writes WHERE task_id = $1`, task).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != 0 {
				t.Fatalf("%d writes are visible while the append waits for the lock, want 0", stored)
			}
			if err := holder.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("AppendWrites after the lock was released: %v", err)
			}
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM checkpoint_writes WHERE task_id = $1`, task).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != n {
				t.Errorf("%d writes stored, want %d", stored, n)
			}
		})
	}
}

// TestWritesLockKey checks that the task lock's text is the one earlier
// versions built with fmt, so that processes of both serialize a task's
// writes on the same lock.
func TestWritesLockKey(t *testing.T) {
	for _, c := range []struct {
		ref  checkpoint.Ref
		task string
	}{
		{checkpoint.Ref{ThreadID: "t", ID: "c"}, "task"},
		{checkpoint.Ref{ThreadID: `a "quoted" thread`, Namespace: "sub\tgraph", ID: "01a2"}, "tâche\n\x00\xff"},
		{checkpoint.Ref{}, ""},
	} {
		want := fmt.Sprintf("trellis/checkpoint/writes %q %q %q %q", c.ref.ThreadID, c.ref.Namespace, c.ref.ID, c.task)
		if got := writesLockKey(c.ref, c.task); got != want {
			t.Errorf("writesLockKey(%+v, %q) = %q, want %q", c.ref, c.task, got, want)
		}
	}
}
