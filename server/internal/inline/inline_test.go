package inline

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// An offer is taken once, run on the caller's goroutine by Run, or on a
// goroutine of its own by Close; a context without a slot, a closed slot
// or SetOff refuse offers, and the slot passes its parent's values and
// cancellation through.
func TestSlot(t *testing.T) {
	type k struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), k{}, "v"))
	s := With(parent)
	if s.Value(k{}) != "v" {
		t.Error("the slot hides its parent's values")
	}
	if Offer(context.Background(), func() {}) {
		t.Error("a context without a slot took an offer")
	}
	ran := 0
	if !Offer(s, func() { ran++ }) || !s.Pending() {
		t.Fatal("the slot refused the first offer")
	}
	if Offer(s, func() { ran += 10 }) {
		t.Error("the slot took a second offer")
	}
	if !s.Run() || ran != 1 || s.Pending() {
		t.Errorf("Run ran %d (want the first offer once)", ran)
	}
	if s.Run() || Offer(s, func() {}) {
		t.Error("a slot that ran its work still takes or runs work")
	}
	s.Close() // nothing left: no goroutine

	// Close starts what Run did not; a derived context is cancelled with
	// the parent.
	s2 := With(parent)
	done := make(chan struct{})
	if !Offer(context.WithValue(s2, k{}, "w"), func() { close(done) }) {
		t.Fatal("an offer through a derived context was refused")
	}
	s2.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not start the offered work")
	}
	if Offer(s2, func() {}) {
		t.Error("a closed slot took an offer")
	}
	child, stop := context.WithCancel(s2)
	defer stop()
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the parent did not reach a context derived from the slot")
	}

	restore := SetOff(true)
	if Offer(With(context.Background()), func() {}) {
		t.Error("an offer was taken while SetOff(true)")
	}
	restore()
	if !Offer(With(context.Background()), func() {}) {
		t.Error("SetOff's restore left offers refused")
	}
}
