// Package hoptrace marks the hops of a request's path (the handler, the
// run's accept, its start, its first write, its end, the answer) for a
// benchmark that wants to know where one run's wall time goes. With no
// hook set, a mark is one atomic load: it stays on the path.
package hoptrace

import "sync/atomic"

var hook atomic.Pointer[func(point string)]

// Set makes fn receive every mark until the returned function restores
// the hook before it. fn is called on the marking goroutine and must be
// quick and safe for concurrent use. For tests and benchmarks.
func Set(fn func(point string)) (restore func()) {
	prev := hook.Swap(&fn)
	return func() { hook.Store(prev) }
}

// Mark reports point to the hook, if one is set.
func Mark(point string) {
	if p := hook.Load(); p != nil {
		(*p)(point)
	}
}
