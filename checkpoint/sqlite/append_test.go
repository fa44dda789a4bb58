package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// TestAppendWritesPaths checks both ways AppendWrites and PutWrites
// write: without a transaction hook on the write connection directly, with
// one in a database/sql transaction that the hook joins (its error undoes
// the write); and that a refused write is explained either way.
func TestAppendWritesPaths(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cp.db"))
	ctx := context.Background()
	ref, err := s.Put(ctx, checkpoint.Ref{ThreadID: "t"}, checkpoint.Checkpoint{ID: checkpoint.NewID(), Created: time.Now()}, checkpoint.Metadata{Step: -1, Source: checkpoint.SourceInput})
	if err != nil {
		t.Fatal(err)
	}
	w := func(i int) []checkpoint.PendingWrite {
		return []checkpoint.PendingWrite{{Index: i, Key: checkpoint.WriteStep, Value: []byte(`"v"`)}}
	}
	if err := s.AppendWrites(ctx, ref, "task", w(0)); err != nil {
		t.Fatalf("AppendWrites without a hook: %v", err)
	}
	var hooked any
	hctx := txhook.With(ctx, func(_ context.Context, tx any) error { hooked = tx; return nil })
	if err := s.AppendWrites(hctx, ref, "task", w(1)); err != nil {
		t.Fatalf("AppendWrites with a hook: %v", err)
	}
	if _, ok := hooked.(*sql.Tx); !ok {
		t.Fatalf("the hook got %T; want the append's *sql.Tx", hooked)
	}
	boom := errors.New("boom")
	fctx := txhook.With(ctx, func(context.Context, any) error { return boom })
	if err := s.AppendWrites(fctx, ref, "task", w(2)); !errors.Is(err, boom) {
		t.Fatalf("AppendWrites with a failing hook: %v; want the hook's error", err)
	}
	if err := s.AppendWrites(ctx, ref, "task", w(0)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("AppendWrites of a stored index without a hook: %v; want ErrConflict", err)
	}
	missing := ref
	missing.ID = checkpoint.NewID()
	if err := s.AppendWrites(ctx, missing, "task", w(0)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("AppendWrites after a missing checkpoint: %v; want ErrNotFound", err)
	}
	if got := storedIndexes(t, s, "task"); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("stored indexes %v; want [0 1]", got)
	}

	// PutWrites takes the same two paths.
	if err := s.PutWrites(ctx, ref, "task", append(w(5), w(7)...)); err != nil {
		t.Fatalf("PutWrites without a hook: %v", err)
	}
	if got := storedIndexes(t, s, "task"); len(got) != 2 || got[0] != 5 || got[1] != 7 {
		t.Fatalf("stored indexes after PutWrites %v; want [5 7]", got)
	}
	if err := s.PutWrites(ctx, missing, "task", w(0)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("PutWrites after a missing checkpoint: %v; want ErrNotFound", err)
	}
	hooked = nil
	if err := s.PutWrites(hctx, ref, "task", w(8)); err != nil {
		t.Fatalf("PutWrites with a hook: %v", err)
	}
	if _, ok := hooked.(*sql.Tx); !ok {
		t.Fatalf("the hook got %T; want PutWrites' *sql.Tx", hooked)
	}
	if err := s.PutWrites(fctx, ref, "task", w(9)); !errors.Is(err, boom) {
		t.Fatalf("PutWrites with a failing hook: %v; want the hook's error", err)
	}
	if got := storedIndexes(t, s, "task"); len(got) != 1 || got[0] != 8 {
		t.Fatalf("stored indexes %v; want [8]", got)
	}
}

// storedIndexes returns the indexes of the stored writes of task, in order.
func storedIndexes(t *testing.T, s *Saver, task string) []int {
	t.Helper()
	var idx []int
	rows, err := s.db.Read.Query(`SELECT idx FROM writes WHERE task_id = ? ORDER BY idx`, task)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, i)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return idx
}
