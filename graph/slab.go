package graph

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
