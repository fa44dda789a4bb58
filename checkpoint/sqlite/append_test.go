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

// TestAppendWritesPaths checks both ways AppendWrites writes: without a
// transaction hook on the write connection directly, with one in a
// database/sql transaction that the hook joins (its error undoes the
// append); and that a refused append is explained either way.
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
	var idx []int
	rows, err := s.db.Read.Query(`SELECT idx FROM writes WHERE thread = 't' ORDER BY idx`)
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
	if len(idx) != 2 || idx[0] != 0 || idx[1] != 1 {
		t.Fatalf("stored indexes %v; want [0 1]", idx)
	}
}
