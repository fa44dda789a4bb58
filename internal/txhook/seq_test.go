package txhook

import (
	"context"
	"testing"
)

// A reservation is asked of one transaction and run only, reserved once,
// taken once and only for the count asked; one reserved and not taken is
// Unused.
func TestSeqs(t *testing.T) {
	type txT struct{ n int }
	tx, other := &txT{1}, &txT{2}
	ctx, s := WithSeqs(context.Background(), tx, "t", "r", 3)
	if n := Want(ctx, tx, "t", "r"); n != 3 {
		t.Fatalf("Want = %d, want 3", n)
	}
	for _, c := range []struct {
		tx            any
		tenant, runID string
	}{{other, "t", "r"}, {tx, "t", "x"}, {tx, "u", "r"}, {"tx", "t", "r"}} {
		if n := Want(ctx, c.tx, c.tenant, c.runID); n != 0 {
			t.Errorf("Want(%v, %q, %q) = %d; another transaction or run must be asked nothing", c.tx, c.tenant, c.runID, n)
		}
	}
	if _, ok := Take(ctx, tx, "t", "r", 3); ok || s.Unused() {
		t.Fatal("Take before Reserve succeeded, or the reservation is Unused before it was made")
	}
	Reserve(ctx, other, "t", "r", 99) // not its transaction: ignored
	Reserve(ctx, tx, "t", "r", 7)
	Reserve(ctx, tx, "t", "r", 12) // reserved already: ignored
	if n := Want(ctx, tx, "t", "r"); n != 0 {
		t.Errorf("Want after Reserve = %d; a second statement must not reserve again", n)
	}
	if !s.Unused() {
		t.Error("a reservation not taken is not Unused")
	}
	if _, ok := Take(ctx, tx, "t", "r", 2); ok {
		t.Error("Take of another count succeeded")
	}
	if last, ok := Take(ctx, tx, "t", "r", 3); !ok || last != 7 {
		t.Errorf("Take = %d, %v; want 7, true", last, ok)
	}
	if _, ok := Take(ctx, tx, "t", "r", 3); ok {
		t.Error("a reservation was taken twice")
	}
	if s.Unused() {
		t.Error("a reservation taken is Unused")
	}
	if c, s := WithSeqs(context.Background(), tx, "t", "r", 0); s != nil || Want(c, tx, "t", "r") != 0 || s.Unused() {
		t.Error("WithSeqs of 0 events asked for a reservation")
	}
}
