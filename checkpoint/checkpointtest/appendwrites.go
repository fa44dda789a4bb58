package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// testAppendWrites checks checkpoint.WriteAppender on a Saver that has it:
// appended writes join the task's (in index order, other tasks untouched),
// a stored index is a conflict that changes nothing, a missing checkpoint
// is ErrNotFound, and PutWrites still replaces everything.
func testAppendWrites(t *testing.T, s checkpoint.Saver) {
	a, ok := s.(checkpoint.WriteAppender)
	if !ok {
		t.Skipf("%T does not append writes (checkpoint.WriteAppender)", s)
	}
	ctx := context.Background()
	th := newThread(t, s, "main")
	c1 := th.put(full("k", 1, `1`))
	chain1 := []checkpoint.Blob{full("k", 1, `1`)}
	w := func(task string, index int, key, value string) checkpoint.PendingWrite {
		return checkpoint.PendingWrite{TaskID: task, Index: index, Key: key, Value: json.RawMessage(value)}
	}
	if err := s.PutWrites(ctx, c1.ref, "task-a", []checkpoint.PendingWrite{w("task-a", 0, checkpoint.WriteResume, `"yes"`), w("task-a", 1, checkpoint.WriteStep, `{"call":0}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWrites(ctx, c1.ref, "task-b", []checkpoint.PendingWrite{w("task-b", 0, "x", `1`)}); err != nil {
		t.Fatal(err)
	}
	appendWrites := func(ws ...checkpoint.PendingWrite) {
		t.Helper()
		if err := a.AppendWrites(ctx, c1.ref, "task-a", ws); err != nil {
			t.Fatalf("AppendWrites: %v", err)
		}
	}
	appendWrites(w("task-a", 2, checkpoint.WriteStep, `{"call":1}`))
	appendWrites(checkpoint.PendingWrite{Index: 4, Key: checkpoint.WriteStep, Value: json.RawMessage(`{"call":3}`)}, w("task-a", 3, checkpoint.WriteStep, `{"call":2}`))
	want := c1.want(chain1,
		w("task-a", 0, checkpoint.WriteResume, `"yes"`), w("task-a", 1, checkpoint.WriteStep, `{"call":0}`),
		w("task-a", 2, checkpoint.WriteStep, `{"call":1}`), w("task-a", 3, checkpoint.WriteStep, `{"call":2}`),
		w("task-a", 4, checkpoint.WriteStep, `{"call":3}`), w("task-b", 0, "x", `1`))
	checkGet(t, s, c1.ref, want)

	// A stored index: a conflict, and nothing of the call is written.
	err := a.AppendWrites(ctx, c1.ref, "task-a", []checkpoint.PendingWrite{w("task-a", 5, "k", `5`), w("task-a", 2, "k", `2`)})
	if !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("AppendWrites of a stored index: err = %v, want ErrConflict", err)
	}
	if err := a.AppendWrites(ctx, c1.ref, "task-a", []checkpoint.PendingWrite{w("other", 6, "k", `1`)}); err == nil {
		t.Error("AppendWrites of another task's write succeeded, want an error")
	}
	checkGet(t, s, c1.ref, want)

	missing := checkpoint.Ref{ThreadID: th.ref.ThreadID, ID: checkpoint.NewID()}
	if err := a.AppendWrites(ctx, missing, "task-a", []checkpoint.PendingWrite{w("task-a", 0, "k", `1`)}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("AppendWrites(%s) err = %v, want ErrNotFound", missing, err)
	}

	// A saver whose PutWrites runs the context's transaction hook runs it
	// in AppendWrites too, inside the transaction: the hook's error
	// undoes the append.
	var hooked int
	boom := errors.New("the hook fails")
	failing := txhook.With(ctx, func(context.Context, any) error { hooked++; return boom })
	if err := s.PutWrites(failing, c1.ref, "task-c", []checkpoint.PendingWrite{w("task-c", 0, "k", `0`)}); hooked > 0 {
		if !errors.Is(err, boom) {
			t.Fatalf("PutWrites with a failing hook: err = %v", err)
		}
		hooked = 0
		err := a.AppendWrites(failing, c1.ref, "task-a", []checkpoint.PendingWrite{w("task-a", 5, "k", `5`)})
		if !errors.Is(err, boom) || hooked != 1 {
			t.Errorf("AppendWrites with a failing hook: err = %v after %d hook calls, want the hook's error after 1", err, hooked)
		}
		checkGet(t, s, c1.ref, want)
		ok := txhook.With(ctx, func(context.Context, any) error { hooked++; return nil })
		if err := a.AppendWrites(ok, c1.ref, "task-a", []checkpoint.PendingWrite{w("task-a", 5, "k", `5`)}); err != nil || hooked != 2 {
			t.Errorf("AppendWrites with a hook: err = %v after %d hook calls", err, hooked)
		}
	} else if err := s.PutWrites(ctx, c1.ref, "task-c", nil); err != nil { // no hooks here: drop the probe's write
		t.Fatal(err)
	}

	// PutWrites replaces appended writes too.
	if err := s.PutWrites(ctx, c1.ref, "task-a", []checkpoint.PendingWrite{w("task-a", 0, "z", `0`)}); err != nil {
		t.Fatal(err)
	}
	checkGet(t, s, c1.ref, c1.want(chain1, w("task-a", 0, "z", `0`), w("task-b", 0, "x", `1`)))
}
