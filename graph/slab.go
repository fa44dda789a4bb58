package graph

import (
	"bytes"
	"sync"
	"unsafe"
)

// Tasks and the states commit makes are carved from slabs: a step that
// runs one node then costs no allocation for either. A slab is never
// reused: each task and each state gets memory no one else has seen, so a
// State or a task context kept by a node stays what it was.
const (
	maxTaskSlab = 32 // tasks per slab at most (176 bytes each)
	maxValSlab  = 64 // slots per slab at most (32 bytes each)
	maxValGens  = 4  // states per slab at most: bounds the old values a slab keeps alive
)

// newTask returns a zeroed task; want is how many the caller still needs.
// A slab holds what the step needs, or as many tasks as the run has run
// steps (so a chain's slabs double) but no more than it has steps left, up
// to maxTaskSlab: a short run allocates about as much as before.
func (r *run) newTask(want int) *task {
	if len(r.taskSlab) == 0 {
		// the steps left bound what a slab can expect of the next steps
		r.taskSlab = make([]task, min(max(want, min(r.stepsRun, r.limit-r.stepsRun), 1), maxTaskSlab))
	}
	t := &r.taskSlab[0]
	r.taskSlab = r.taskSlab[1:]
	return t
}

// newVals returns the slots of a new state, to be filled by the caller.
// Each state's slice is capped at its length, so appending to one never
// writes into the next.
func (r *run) newVals() []slot {
	n := len(r.state.vals)
	if len(r.valSlab) < n || n == 0 {
		gens := max(min(maxValSlab/max(n, 1), maxValGens, r.limit-r.stepsRun), 1)
		r.valSlab = make([]slot, gens*n)
	}
	vals := r.valSlab[:n:n]
	r.valSlab = r.valSlab[n:]
	return vals
}

// Checkpoint IDs, task IDs and small blob data are copied into shared
// chunks of bytes instead of each getting an allocation of its own (two
// or three per saved step). A chunk is only ever appended to: the bytes
// handed out are never written again, so a string made of them with
// unsafe.String is as immutable as any, and a []byte is capped at its
// length, so an append to it copies. A chunk is freed when nothing handed
// out of it is referenced any more; a long-lived value can so keep up to
// byteChunk bytes of others' alive, which bounds the cost at a few times
// the small values kept, nothing for the large ones (never carved).
const (
	byteChunk   = 1024 // bytes per chunk
	maxCarvable = 128  // longer values get an allocation of their own
)

// byteChunks hands a goroutine a chunk to append to; chunks are per P in
// effect, so concurrent runs do not contend.
var byteChunks = sync.Pool{New: func() any { return new([]byte) }}

// carveBytes returns a copy of b that no one else uses, capped at its
// length, carved from a shared chunk when it is small.
func carveBytes(b []byte) []byte {
	if len(b) == 0 || len(b) > maxCarvable {
		return bytes.Clone(b)
	}
	c := byteChunks.Get().(*[]byte)
	if cap(*c)-len(*c) < len(b) {
		*c = make([]byte, 0, byteChunk)
	}
	start := len(*c)
	*c = append(*c, b...)
	out := (*c)[start:len(*c):len(*c)]
	byteChunks.Put(c)
	return out
}

// carveString returns b as a string carved from a shared chunk (see
// carveBytes); b may be reused afterwards.
func carveString(b []byte) string {
	if len(b) == 0 || len(b) > maxCarvable {
		return string(b)
	}
	out := carveBytes(b)
	return unsafe.String(&out[0], len(out))
}
