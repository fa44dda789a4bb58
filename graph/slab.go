package graph

import (
	"reflect"
	"sync/atomic"
)

// Tasks and the states commit makes are carved from slabs: a step that
// runs one node then costs no allocation for either. A slab is never
// reused: each task and each state gets memory no one else has seen, so a
// State or a task context kept by a node stays what it was.
//
// A graph remembers how many tasks and states its last run carved (see
// slabHints), and a run's first slabs are that size, so a run shaped like
// the one before it allocates one slab of each (a 100-node chain made nine
// task slabs and 25 state slabs before). What a slab keeps alive bounds
// its size: a committed task lets go of its writes (see release), so a task
// slab keeps only its own bytes; a state slab keeps every value its states
// hold, so it holds at most maxValGens states unless all the schema's
// values are small and pointer-free (counters, flags), which keep nothing
// alive beyond the slab itself.
const (
	maxTaskSlab  = 32  // tasks per slab at most while a run doubles them (176 bytes each)
	maxHintSlab  = 128 // tasks per slab at most when the last run's count says more
	maxValSlab   = 64  // slots per slab at most (32 bytes each)
	maxValGens   = 4   // states per slab at most: bounds the old values a slab keeps alive
	maxSmallSlab = 256 // slots per slab at most when every value is small and pointer-free
)

// slabHints is what a graph's last run carved, for the next run's slabs.
type slabHints struct {
	tasks, states, path atomic.Int32
}

// remember records what the run carved, for the graph's next runs.
func (r *run) remember() {
	h := r.g.hints
	h.tasks.Store(r.tasksMade)
	h.states.Store(r.statesMade)
	h.path.Store(int32(min(len(r.path), 1<<20)))
}

// newTask returns a zeroed task; want is how many the caller still needs.
// A slab holds what the step needs, or as many tasks as the run has run
// steps (so a chain's slabs double) but no more than it has steps left, up
// to maxTaskSlab: a short run allocates about as much as before. When the
// graph's last run carved more tasks than this one has so far, the slab
// holds the difference, up to maxHintSlab.
func (r *run) newTask(want int) *task {
	if len(r.taskSlab) == 0 {
		// the steps left bound what a slab can expect of the next steps
		n := min(max(want, min(r.stepsRun, r.limit-r.stepsRun), 1), maxTaskSlab)
		if h := int(r.g.hints.tasks.Load() - r.tasksMade); h > n {
			n = min(h, maxHintSlab)
		}
		r.taskSlab = make([]task, n)
	}
	r.tasksMade++
	t := &r.taskSlab[0]
	r.taskSlab = r.taskSlab[1:]
	return t
}

// newVals returns the n zeroed slots of a new state, to be filled by the
// caller. Each state's slice is capped at its length, so appending to one
// never writes into the next.
func (r *run) newVals(n int) []slot {
	if len(r.valSlab) < n || n == 0 {
		r.valSlab = make([]slot, r.valGens(n)*n)
	}
	r.statesMade++
	vals := r.valSlab[:n:n]
	r.valSlab = r.valSlab[n:]
	return vals
}

// valGens is how many states of n slots the next slab holds.
func (r *run) valGens(n int) int {
	n = max(n, 1)
	gens := min(maxValSlab/n, maxValGens, r.limit-r.stepsRun)
	if h := int(r.g.hints.states.Load() - r.statesMade); h > gens {
		most := min(maxValSlab/n, maxValGens)
		if r.g.sch.small {
			most = maxSmallSlab / n
		}
		gens = max(gens, min(h, most))
	}
	return max(gens, 1)
}

// smallValue reports whether a value of type t, boxed in a state slot,
// keeps nothing alive but a few bytes of its own: no pointers, at most 64
// bytes.
func smallValue(t reflect.Type) bool {
	if t == nil || t.Size() > 64 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return smallValue(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !smallValue(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
