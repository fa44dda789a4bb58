package graph

import "github.com/trellis-agents/trellis/checkpoint"

// A nested run's input checkpoint folds into its first step's.
//
// A nested run (a subgraph, or a graph invoked from a node) in a namespace
// its parent's run just made (see task.freshChild) saves its input's
// checkpoint and then, once its first step commits, that step's. With a
// saver that stores batches (checkpoint.BatchPutter), the input's
// checkpoint is held and written with the first step's in one PutBatch,
// the way a root run's pre-input checkpoint pairs with its input's
// (putPair): the same checkpoints, IDs, parents and blobs, one transaction
// instead of two. Whatever would refer to the held checkpoint before that
// — a task's pending writes (an interrupt, a failure, a parallel task, a
// durable step), or a run nested in one of the first step's tasks, whose
// namespace derives from the held checkpoint's ID — writes it first
// (flushInput), so nothing saved ever points at a checkpoint that is not
// stored. A run that ends before its first step's save (an input that
// fails, an error, an interrupt) writes it alone in finish (putUnpaired).
//
// What a crash changes: a process that stops while the first step runs,
// before anything of that step was saved, leaves the namespace empty
// instead of holding the input's checkpoint. The parent task then runs
// again (it is not finished: its pending write is not saved) and starts
// the nested run afresh with the input it builds — the same work the
// restored input checkpoint would have led to, as the first step had
// saved nothing (no model reply, no tool result) that could be lost.
//
// The in-memory saver is left out: its PutBatch copies what it stores,
// where two PutOwned calls copy nothing, and a transaction saved is
// nothing in memory. DurabilityExit holds everything until the run ends
// anyway.

// foldsInput reports whether the nested run holds its input's checkpoint
// for its first step's save.
func (r *run) foldsInput() bool {
	if r.parent == nil || !r.freshNS || r.cfg.durability == DurabilityExit {
		return false
	}
	if _, mem := r.cfg.saver.(*checkpoint.Memory); mem {
		return false
	}
	_, ok := r.cfg.saver.(checkpoint.BatchPutter)
	return ok
}

// holdInput makes the next save (the input's) hold its checkpoint for the
// first step's save (putPair).
func (r *run) holdInput() {
	x := r.extra()
	x.holdCP, x.pairCP = true, true
}

// flushInput writes a nested run's input checkpoint held for its first
// step's save, now: something is about to refer to it. Tasks of the first
// step call it from their goroutines, hence the lock.
func (r *run) flushInput() error {
	if r.parent == nil || r.x == nil {
		return nil
	}
	r.x.heldMu.Lock()
	defer r.x.heldMu.Unlock()
	return r.putUnpaired()
}
