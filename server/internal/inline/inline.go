// Package inline lets a request's handler run, on its own goroutine, the
// work a call it makes would otherwise start on a new one: the run queue
// (server/queue) offers the hand-off of a run it has just accepted, and a
// runs/wait handler, which would only block until that run ends, runs it
// itself. It saves the new goroutine's start and the wake-up of the
// waiting handler, which on a busy processor are a good part of a short
// run's latency.
//
// The contract: a handler calls With, makes its calls with the returned
// context, and always calls Close (deferred) once it no longer will run
// the work; Close starts the work not run yet on a goroutine of its own,
// exactly what the offering call would have done. So a handler that
// returns early (an error after the accept, a panic) leaves nothing
// stranded.
package inline

import (
	"context"
	"sync"
	"sync/atomic"
)

type key struct{}

// off makes Offer refuse every offer (SetOff).
var off atomic.Bool

// SetOff makes Offer refuse every offer while on is true, so that the
// work starts on a goroutine of its own as without slots; it returns a
// function restoring the setting before it. For benchmarks comparing the
// two paths in one binary.
func SetOff(on bool) (restore func()) {
	prev := off.Swap(on)
	return func() { off.Store(prev) }
}

// Slot is a context carrying a place for one piece of work a call offers
// (Offer) and the handler that made the slot runs (Run) or lets go (Close).
type Slot struct {
	context.Context
	mu     sync.Mutex
	fn     func()
	closed bool // Run or Close took the slot: no more offers
}

// With returns a Slot, a context derived from ctx that carries it: a
// single allocation on a request's path.
func With(ctx context.Context) *Slot {
	return &Slot{Context: ctx}
}

// Value is ctx's Value, and the slot itself for its own key.
func (s *Slot) Value(k any) any {
	if k == (key{}) {
		return s
	}
	return s.Context.Value(k)
}

// Offer gives fn to the slot ctx carries, if any is still free; it
// reports whether the slot took it. When it did not, the caller does the
// work as it would without a slot (on a goroutine of its own).
func Offer(ctx context.Context, fn func()) bool {
	s, _ := ctx.Value(key{}).(*Slot)
	if s == nil || fn == nil || off.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.fn != nil {
		return false
	}
	s.fn = fn
	return true
}

// Pending reports whether work was offered and not yet run.
func (s *Slot) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fn != nil
}

// take returns the offered work and closes the slot to further offers.
func (s *Slot) take() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn := s.fn
	s.fn, s.closed = nil, true
	return fn
}

// Run runs the offered work on the caller's goroutine and reports whether
// there was any. The slot takes no offer after it.
func (s *Slot) Run() bool {
	fn := s.take()
	if fn == nil {
		return false
	}
	fn()
	return true
}

// Close starts the offered work not run yet on a goroutine of its own and
// takes no offer after it. Calling it after Run, or twice, does nothing.
func (s *Slot) Close() {
	if fn := s.take(); fn != nil {
		go fn()
	}
}
