package graph

import (
	"fmt"
	"sync"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Durability says when a run with a checkpointer writes.
type Durability uint8

// Durability modes.
const (
	// DurabilitySync writes each step's checkpoint before the next step
	// starts, and each task's pending writes as soon as the task finishes:
	// after a crash nothing committed is lost and no finished task runs
	// again. The default.
	DurabilitySync Durability = iota
	// DurabilityAsync hands checkpoints and pending writes to a background
	// writer, in order, while the next step runs; at most one checkpoint is
	// in flight, so a crash loses at most the last step (which then runs
	// again). Faster when the saver is remote.
	DurabilityAsync
	// DurabilityExit writes only when the run ends — completed, interrupted
	// or failed — one checkpoint plus the pending writes of the step it
	// stopped in. A crash loses the whole run.
	DurabilityExit
)

func (d Durability) String() string {
	switch d {
	case DurabilityAsync:
		return "async"
	case DurabilityExit:
		return "exit"
	}
	return "sync"
}

// WithDurability chooses when checkpoints are written (DurabilitySync by
// default).
func WithDurability(d Durability) RunOption {
	return runOptionFunc(func(c *runConfig) { c.durability = d })
}

// writer runs a run's saver calls in order on one background goroutine
// (DurabilityAsync). The first error is kept and reported at the next
// flush.
type writer struct {
	jobs    chan func() error
	done    chan struct{}
	pending sync.WaitGroup
	mu      sync.Mutex
	err     error
}

func newWriter() *writer {
	w := &writer{jobs: make(chan func() error, 256), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for job := range w.jobs {
			if err := job(); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
			}
			w.pending.Done()
		}
	}()
	return w
}

func (w *writer) submit(job func() error) {
	w.pending.Add(1)
	w.jobs <- job
}

// flush waits for every submitted job and returns the first error.
func (w *writer) flush() error {
	w.pending.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// failed reports the first error without waiting.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *writer) close() error {
	err := w.flush()
	close(w.jobs)
	<-w.done
	return err
}

// put stores a checkpoint now (sync, exit) or through the writer (async).
func (r *run) put(cp checkpoint.Checkpoint, md checkpoint.Metadata) error {
	return r.store(cp, md, false)
}

// putOwned is put for a checkpoint built for this call alone, which no
// one reads or changes afterwards: the in-memory saver then stores it
// without copying it (see checkpoint.Memory.PutOwned).
func (r *run) putOwned(cp checkpoint.Checkpoint, md checkpoint.Metadata) error {
	return r.store(cp, md, true)
}

func (r *run) store(cp checkpoint.Checkpoint, md checkpoint.Metadata, owned bool) error {
	// The token is the namespace's head as this run knows it; the parent in
	// md is the checkpoint the run went on from (older for a replay or fork).
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.headID}
	defer func() { r.headID = cp.ID }()
	if r.w == nil {
		// Called directly, not through a closure: one allocation less a step.
		return r.putNow(ref, cp, md, owned)
	}
	if err := r.w.flush(); err != nil { // at most one checkpoint in flight
		return err
	}
	r.w.submit(func() error { return r.putNow(ref, cp, md, owned) })
	return nil
}

// putMemory stores a checkpoint built for this Put alone, whose versions
// are vers, with the run's saver, a *checkpoint.Memory (see scratch).
func (r *run) putMemory(cp *checkpoint.Checkpoint, vers []checkpoint.KeyVersion, md *checkpoint.Metadata) error {
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.headID}
	r.headID = cp.ID // as store does, whether the Put fails or not
	if err := r.cfg.saver.(*checkpoint.Memory).PutStep(r.ctx, &ref, cp, vers, md); err != nil {
		return fmt.Errorf("graph: save checkpoint of thread %q at step %d: %w", r.cfg.thread, md.Step, err)
	}
	return nil
}

// putNow stores a checkpoint with the run's saver.
func (r *run) putNow(ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata, owned bool) error {
	var err error
	// Only the in-memory saver itself: a type that embeds it and overrides
	// Put must see every checkpoint.
	if m, ok := r.cfg.saver.(*checkpoint.Memory); ok && owned {
		_, err = m.PutOwned(r.ctx, ref, cp, md)
	} else {
		_, err = r.cfg.saver.Put(r.ctx, ref, cp, md)
	}
	if err != nil {
		return fmt.Errorf("graph: save checkpoint of thread %q at step %d: %w", r.cfg.thread, md.Step, err)
	}
	return nil
}

// finish writes what DurabilityExit held back, and drains the async writer.
// Under DurabilityExit the thread ends up as under DurabilitySync but for
// the intermediate checkpoints: the writes meant for the checkpoint the run
// started from go there, and a new checkpoint is saved only if a step
// committed.
func (r *run) finish(runErr error) error {
	if err := r.putUnpaired(); err != nil {
		return err
	}
	if r.cfg.saver != nil && r.cfg.durability == DurabilityExit && r.dirty {
		x := r.extra()
		x.finishing = true
		if err := r.putHeld(); err != nil {
			return err
		}
		for _, h := range x.held {
			ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: h.cp}
			if err := r.cfg.saver.PutWrites(r.ctx, ref, h.task, h.ws); err != nil {
				return fmt.Errorf("graph: save the pending writes of node %q: %w", h.node, err)
			}
		}
		if x.commits > 0 {
			if err := r.save(x.source); err != nil {
				return err
			}
			for _, t := range r.next {
				if t.ran || t.done || len(t.in.raisedList()) > 0 || t.passed || len(t.in.nestedMap()) > 0 {
					if err := r.putTaskWrites(t); err != nil {
						return err
					}
				}
			}
			for _, m := range x.raisedAfter {
				if err := r.saveAfter(m); err != nil {
					return err
				}
			}
		}
	}
	if r.w != nil {
		return r.w.close()
	}
	return nil
}
