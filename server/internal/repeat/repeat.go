// Package repeat calls a function on a timer, without a goroutine of its
// own between calls, until the function or its caller stops it.
package repeat

import (
	"sync"
	"time"
)

// Every calls fn d after it is started and then d after each call that
// returns true; a call that returns false ends it. The returned stop ends
// it too: it waits for a call in progress, and no call starts after it
// returns. Calls never overlap.
func Every(d time.Duration, fn func() (again bool)) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && fn() {
			t.Reset(d)
		}
	}
	mu.Lock()
	t = time.AfterFunc(d, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
