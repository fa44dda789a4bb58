package graph

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Tasks and the states commit makes are carved from slabs: a step that
// runs one node then costs no allocation for either. A slab is never
// reused: each task and each state gets memory no one else has seen, so a
// State or a task context kept by a node stays what it was.
//
// A graph remembers how many tasks and states its last run carved (see
// runMemo), and a run's first slabs are that size, so a run shaped like
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

// runMemo is what a graph's runs share: what the last run carved, for
// the next run's slabs, and a pool of working buffers.
type runMemo struct {
	tasks, states, path atomic.Int32
	bufs                sync.Pool // of *runBufs
}

// runBufs are the buffers a run's loop works in and nothing outside it
// sees: they go back to the graph's pool when the run ends, zeroed, so a
// run of a graph in steady use allocates none of them.
type runBufs struct {
	tally []keyTally // per key: this step's writes (reset after each commit)
	// keys written this step, in order of first write, while apply runs;
	// then, while plan runs, the nodes triggered (one buffer for both)
	touched []int
	ws      []Write  // this step's writes grouped by key (reused)
	encs    [][]byte // their encodings, when their tasks saved them (see apply)
	// per task of a parallel step with a saver, by its idx: its writes'
	// pending writes, as taskWrites encoded them, until apply (nil for a
	// task whose writes were not encoded)
	pw []taskEnc
	// per key, when made: the encodings of run.stepLog's writes that their
	// tasks' pending writes held (nil entries where none). A key's are used
	// only while they are as many as its logged writes (see takeEncodings):
	// every append here goes with an append to stepLog, not every append
	// to stepLog with one here.
	stepEnc [][][]byte
	push    []Target // this step's Sends, while plan runs
	seen    [][]bool // join barriers: per join, which sources have finished
	// per node, twice: marks[i] is step+1 when node i was triggered this
	// step, marks[n+i] its executions in this run (see runCounts)
	marks []int
	// a parallel step's bookkeeping, its workers' function (made once:
	// a go statement with arguments allocates a closure) and its stall
	// check's timer (see runParallel); r is the run using the buffers
	step stepSync
	work func()
	// workGrown is work on a stack grown first (see growStack), for the
	// step's first workers, which take task after task
	workGrown func()
	tick      *time.Timer
	r         *run
	// a save's carving chunk and containers (see run.save), kept for the
	// run's next save instead of a pool round trip each
	cv carver
	sc *saveScratch
	// the run's last idPrefix and the checkpoint ID it hashed (see
	// stepPrefix): a run without a saver keeps one checkpoint ID, so its
	// steps share one prefix
	pre   fnv128
	preCP string
	preOK bool
	// the task-ID hash of the run's thread alone, and the thread it hashed
	// (see idPrefix): set when the run takes the buffers, before any task
	// runs, and only read until putBuffers, so tasks on other goroutines
	// may read it too
	thr   fnv128
	thrOf string
	thrOK bool
}

// stepPrefix is r.idPrefix, hashed again only when the run's checkpoint ID
// is not the one the last call hashed. The thread and namespace, the
// prefix's other inputs, are set
// before a run's first step and stay while it holds the buffers. Only the
// run's loop goroutine calls it. A run without buffers (they went back to
// the pool) hashes it each time, as before.
//
// The test is the strings' length and data pointer, not their bytes (a
// carved ID is never rewritten while referenced): an equal ID at another
// address is hashed again, to the same prefix. afterCommit spells
// stepPrefix out, to save a call a step.
func (b *runBufs) stepPrefix(r *run) fnv128 {
	if b != nil && b.hasPrefix(r.cpID) {
		return b.pre
	}
	return b.hashPrefix(r)
}

// hasPrefix reports whether b.pre is the prefix for checkpoint ID id.
func (b *runBufs) hasPrefix(id string) bool {
	return b.preOK && len(b.preCP) == len(id) && unsafe.StringData(b.preCP) == unsafe.StringData(id)
}

// hashPrefix is stepPrefix when the prefix is hashed: it keeps the hash
// and the ID it is for, in buffers the run holds.
func (b *runBufs) hashPrefix(r *run) fnv128 {
	if b == nil {
		return r.idPrefix()
	}
	b.pre, b.preCP, b.preOK = r.idPrefix(), r.cpID, true
	return b.pre
}

// buffers returns zeroed working buffers for run r of g.
func (m *runMemo) buffers(g *Graph, r *run) *runBufs {
	if b, ok := m.bufs.Get().(*runBufs); ok {
		b.r = r
		return b
	}
	b := &runBufs{tally: make([]keyTally, len(g.sch.keys)), marks: make([]int, 2*len(g.nodes)), r: r}
	if len(g.joins) > 0 {
		b.seen = make([][]bool, len(g.joins))
		for i, j := range g.joins {
			b.seen[i] = make([]bool, len(j.from))
		}
	}
	return b
}

// parallel readies the buffers for a parallel step: its done channel and
// its workers' function are made on the first one.
func (b *runBufs) parallel() {
	if b.work == nil {
		b.step.done = make(chan struct{}, 1)
		b.work = func() { b.r.worker(&b.step) }
		b.workGrown = func() { growStack(); b.r.worker(&b.step) }
	}
}

// putBuffers zeroes the run's buffers and gives them back to the graph's
// pool. The run keeps none of them: a context a node kept cannot reach
// another run's buffers through it.
func (r *run) putBuffers() {
	b := r.b
	if b == nil {
		return
	}
	r.b = nil
	clear(b.tally)
	clear(b.marks)
	for _, s := range b.seen {
		clear(s)
	}
	clear(b.ws[:cap(b.ws)])
	clear(b.pw[:cap(b.pw)])
	b.pw = b.pw[:0]
	b.dropEncodings()
	clear(b.push[:cap(b.push)])
	b.touched, b.ws, b.push = b.touched[:0], b.ws[:0], b.push[:0]
	b.cv.release()
	if b.sc != nil {
		b.sc.put()
		b.sc = nil
	}
	b.r = nil
	b.pre, b.preCP, b.preOK = fnv128{}, "", false
	b.thr, b.thrOf, b.thrOK = fnv128{}, "", false
	r.g.memo.bufs.Put(b)
}

// remember records what the run carved, for the graph's next runs.
func (r *run) remember() {
	h := r.g.memo
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
		if h := int(r.g.memo.tasks.Load() - r.tasksMade); h > n {
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
	if h := int(r.g.memo.states.Load() - r.statesMade); h > gens {
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
