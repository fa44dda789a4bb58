package graph

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

// FinalWrite is the last checkpoint of a run that completed, held back by
// WithFinalWrite: the caller writes it with Put, inside a transaction of
// its own making, so that the run's end and its last step commit together.
// Until Put succeeds, the thread's latest checkpoint is the one before it:
// a run whose process stops first is replayed from there, as after any
// crash.
type FinalWrite struct {
	// State is the run's final state, what the held checkpoint saves.
	State State

	saver checkpoint.Saver
	ref   checkpoint.Ref
	cp    checkpoint.Checkpoint
	md    checkpoint.Metadata
	done  bool
}

// Put writes the held checkpoint with the run's checkpointer, with ctx:
// a saver that runs the context's transaction hook (internal/txhook) runs
// it in the checkpoint's transaction. It fails when the thread moved on
// since the run (checkpoint.ErrConflict) and when called a second time.
func (f *FinalWrite) Put(ctx context.Context) error {
	if f.done {
		return errors.New("graph: the run's last checkpoint is written already")
	}
	if _, err := f.saver.Put(ctx, f.ref, f.cp, f.md); err != nil {
		return fmt.Errorf("graph: save checkpoint of thread %q at step %d: %w", f.ref.ThreadID, f.md.Step, err)
	}
	f.done = true
	return nil
}

// WithFinalWrite holds back the last checkpoint of a root run that
// completes (no next task, no interrupt) under DurabilitySync or
// DurabilityAsync and hands it to fn, before the run returns, instead of
// writing it. The caller must call its Put (a run service writes it in
// the transaction that records the run's end); until then the thread does
// not show the run's last step. Other runs (interrupted, failed, under
// DurabilityExit, without a checkpointer) write as usual, and fn is not
// called.
func WithFinalWrite(fn func(*FinalWrite)) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().finalWrite = fn })
}

// holdFinal reports whether the checkpoint save is about to write is the
// run's last and WithFinalWrite wants it; if so it hands it over.
func (r *run) holdFinal(cp checkpoint.Checkpoint, md checkpoint.Metadata) bool {
	if !r.mayHoldFinal(&md) {
		return false
	}
	fn := r.cfg.get().finalWrite
	if r.w != nil {
		// The writer's queue goes first; a failure there is the run's.
		if err := r.w.flush(); err != nil {
			return false
		}
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.headID}
	fn(&FinalWrite{State: r.state, saver: r.cfg.saver, ref: ref, cp: cp, md: md})
	r.headID = cp.ID
	return true
}

// mayHoldFinal reports whether holdFinal would take a checkpoint with
// metadata md, but for a failure to flush the async writer.
func (r *run) mayHoldFinal(md *checkpoint.Metadata) bool {
	return r.cfg.get().finalWrite != nil && r.parent == nil && r.ns == "" && len(r.next) == 0 && !r.uncommitted &&
		r.cfg.durability != DurabilityExit && (md.Source == checkpoint.SourceLoop || md.Source == checkpoint.SourceInput) &&
		(r.x == nil || r.x.heldCP == nil && r.x.pending == nil)
}
