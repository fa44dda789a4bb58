package graph

import (
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

// The pre-input checkpoint. A root run given an input first saves a
// checkpoint of the state before the input (source "input", step -1 on a
// new thread and one past the thread's last step otherwise), whose only
// next task is START carrying the input; applying the input is then a step
// of its own (source "loop"). This is LangGraph's input checkpoint: the
// checkpoint where a message first appears has a parent that does not hold
// it yet, so a run from that parent with another input branches — which is
// how a chat UI edits a thread's first message. A run from a pre-input
// checkpoint without input applies the input it carries (a crash between
// the two checkpoints, or a replay).

// applyInput applies the input as step 0 and schedules START's targets;
// with pre, after saving the pre-input checkpoint at r.step, in the step
// after it.
func (r *run) applyInput(input Update, pre bool) error {
	in := r.newTask(1)
	in.r, in.node, in.writes, in.step = r, r.g.start, input, r.step
	if err := r.checkWrites(in); err != nil {
		return err
	}
	if r.g.start.conds != nil || r.g.start.fans != nil {
		in.Context = r.ctx
		view := r.state
		if len(input) > 0 {
			view = r.state.clone()
			if err := r.applyOwn(view, in); err != nil {
				return err
			}
		}
		if err := in.route(view); err != nil {
			return err
		}
	}
	if pre {
		// Only a valid input is saved: its checkpoint would wait forever.
		if err := r.savePreInput(input); err != nil {
			return err
		}
		r.step++
		in.step = r.step
		r.next = nil
	}
	tasks := []*task{in}
	if err := r.apply(tasks); err != nil {
		return err
	}
	if r.x != nil && r.x.logRestart {
		// A Stateful subgraph's new invocation: the parent's values are
		// not its writes, and the log starts over before the input's
		// checkpoint saves it (which clears logRestart).
		r.log = r.log[:0]
	}
	return r.afterCommit(tasks)
}

// pendingInput is an input saved in a pre-input checkpoint and not yet
// applied.
type pendingInput struct {
	input Update
	id    string // its START task's ID, when restored
}

// preInput reports whether a run applying input writes a pre-input
// checkpoint first: root runs with a checkpointer and an input do.
func (r *run) preInput(input Update) bool {
	return r.parent == nil && r.cfg.saver != nil && input != nil
}

// savePreInput saves the pre-input checkpoint for input at r.step. Under
// DurabilityExit it is held and written when the run ends, before the
// run's last checkpoint; otherwise, when the saver stores batches, it is
// held until the input's step is saved and written with it (putPair).
func (r *run) savePreInput(input Update) error {
	x := r.extra()
	x.pending = &pendingInput{input: input}
	defer func() { x.pending = nil }()
	saved := r.next
	r.next = nil // a new input drops what was pending
	defer func() { r.next = saved }()
	x.holdCP = r.cfg.durability == DurabilityExit
	if !x.holdCP {
		// Held for the step that applies the input: both are written in
		// one transaction when the saver stores batches (putPair).
		_, x.pairCP = r.cfg.saver.(checkpoint.BatchPutter)
		x.holdCP = x.pairCP
	}
	return r.save(checkpoint.SourceInput)
}

// putPair writes the held pre-input checkpoint and cp, the checkpoint of
// the step that applied its input, in one call (checkpoint.BatchPutter):
// one transaction, whose hook runs once, instead of two. The checkpoints,
// their IDs, parents and blobs are those two Puts would write. It writes
// before it returns under DurabilityAsync too, as the pre-input checkpoint
// was: no node runs before the run's first write has committed (the
// service claims the run in it).
func (r *run) putPair(cp checkpoint.Checkpoint, md checkpoint.Metadata) error {
	h := r.x.heldCP
	r.x.heldCP, r.x.pairCP = nil, false
	if r.w != nil {
		if err := r.w.flush(); err != nil {
			return err
		}
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.headID}
	entries := []checkpoint.Entry{{Checkpoint: h.cp, Metadata: h.md}, {Checkpoint: cp, Metadata: md}}
	if _, err := checkpoint.PutAll(r.ctx, r.cfg.saver, ref, entries); err != nil {
		return fmt.Errorf("graph: save the checkpoints of thread %q at steps %d and %d: %w", r.cfg.thread, h.md.Step, md.Step, err)
	}
	r.headID = cp.ID
	return nil
}

// putUnpaired writes a pre-input checkpoint held for putPair alone, when
// the run ends before the step that applies its input is saved (an input
// that fails to apply): it is written then as without the fold.
func (r *run) putUnpaired() error {
	if r.x == nil || !r.x.pairCP || r.x.heldCP == nil {
		return nil
	}
	h := r.x.heldCP
	r.x.heldCP, r.x.pairCP = nil, false
	return r.put(h.cp, h.md)
}

// startTask is the START task of a pre-input checkpoint, as Next lists it.
func (r *run) startTask(step int) (checkpoint.Task, error) {
	in := r.x.pending.input
	entries := make([]wireLogEntry, 0, len(in))
	for _, w := range in {
		b, err := w.key.self.encodeWrite(w)
		if err != nil {
			return checkpoint.Task{}, fmt.Errorf("encode the input: %w", err)
		}
		entries = append(entries, wireLogEntry{Key: w.key.name, Write: b})
	}
	p, err := json.Marshal(entries)
	if err != nil {
		return checkpoint.Task{}, fmt.Errorf("encode the input: %w", err)
	}
	t := &task{r: r, node: r.g.start, step: step + 1}
	return checkpoint.Task{ID: t.ID(), Node: START, Payload: p}, nil
}

// restoreStart reads the input a pre-input checkpoint's START task carries.
func (r *run) restoreStart(ct checkpoint.Task) error {
	var entries []wireLogEntry
	if err := json.Unmarshal(ct.Payload, &entries); err != nil {
		return fmt.Errorf("the input of task %s: %w", ct.ID, err)
	}
	in := Update{}
	for _, e := range entries {
		i, ok := r.g.sch.byName(e.Key)
		if !ok {
			return fmt.Errorf("the input of task %s writes key %q, which this graph's schema lacks", ct.ID, e.Key)
		}
		w, err := r.g.sch.keys[i].decodeWrite(e.Write)
		if err != nil {
			return err
		}
		in = append(in, w)
	}
	r.extra().pending = &pendingInput{input: in, id: ct.ID}
	return nil
}

// heldCheckpoint is a checkpoint DurabilityExit writes when the run ends.
type heldCheckpoint struct {
	cp checkpoint.Checkpoint
	md checkpoint.Metadata
}

// putHeld writes the held pre-input checkpoint (DurabilityExit).
func (r *run) putHeld() error {
	h := r.x.heldCP
	if h == nil {
		return nil
	}
	r.x.heldCP = nil
	if err := r.put(h.cp, h.md); err != nil {
		return err
	}
	if r.wants(EventCheckpoint) {
		r.deliver(Event{Kind: EventCheckpoint, Step: h.md.Step, Namespace: r.ns, Checkpoint: checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: h.cp.ID}})
	}
	return nil
}
