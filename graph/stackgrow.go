package graph

// workerStack is how much stack a parallel step's first workers take
// before they run their first task (see growStack). A step that starts a
// goroutine per task (a slow node's, or past the stall check) does not
// grow them: its tasks wait on something, and thousands of them would
// hold 16 KB each.
const workerStack = 8 << 10

// growStack grows the calling goroutine's stack, while it is still
// shallow, to hold a frame of workerStack bytes on top of what it uses.
//
// A worker is a new goroutine with a small stack. Its first task (the
// node, then the save of its pending writes, encoding/json's recursion
// included) outgrows that stack deep in the call, and the runtime then
// copies the stack, walking and adjusting every frame on it: measured,
// about 13,000 instructions a worker, an eighth of a plan step's engine
// cost. Grown here, the same copy moves two frames.
//
//go:noinline
func growStack() {
	var pad [workerStack]byte
	touch(pad[:])
}

// touch keeps growStack's frame from being optimized away.
//
//go:noinline
func touch(b []byte) { b[len(b)-1] = 1 }
