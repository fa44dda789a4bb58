package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Durable runs fn as a durable step of the running node: a piece of work whose
// result is saved as soon as it returns, so that when the node runs again —
// after a sibling's or its own interrupt, a failure, a retry, a crash —
// Durable returns the saved result instead of calling fn, and the work's side
// effects (a payment, a model call, an e-mail) are not repeated.
//
// A step is a pending write of the node's task (checkpoint.WriteStep), saved
// with the run's checkpointer like the task's other writes; steps are keyed
// by the task and by their call order within it, so parallel tasks never
// share one. name identifies the step in that order: when a re-run calls
// Durable in another order than the saved run did, the call whose name
// differs from the saved one returns a *NonDeterminismError naming both.
// Code around steps must therefore be deterministic: branch on step results
// and on the state, not on the clock or a random number (take those inside
// a step).
//
// The result is encoded as JSON when saved, and Durable always returns it
// decoded from that JSON, the first time as on a re-run, so a result behaves
// the same whichever process produced it: T needs exported fields (or its
// own JSON methods) to survive. An error from fn is returned as is and not
// saved: the step runs again next time. fn may call Interrupt: the step
// then ends with the interrupt's error, is not saved, and runs again, with
// the answer, on resume. Once the task finishes, its steps are not read
// again: its writes are what a resumed run uses.
//
// When steps are saved depends on the run's durability: DurabilitySync
// saves each step before Durable returns (a crash repeats at most the step
// that was running); DurabilityAsync hands the save to the background
// writer (a crash may also repeat the steps not yet written);
// DurabilityExit saves them only when the run stops, interrupted or
// failed (a crash repeats them all). A save adds the step to the task's
// saved writes when the saver can append (checkpoint.WriteAppender: one
// row per step); with other savers it rewrites the task's pending writes,
// so a node with n steps writes O(n²) bytes over its run: split a long
// series of steps over several nodes there. Without a checkpointer, steps
// are kept in memory for the task's retries only.
//
// Call Durable from the node's own goroutine (as Interrupt), one step at a
// time: steps do not nest, and calling Durable inside a step's fn is an
// error. To run steps in parallel, start them with Go.
// Outside a graph node Durable is an error.
func Durable[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	t := taskFrom(ctx)
	if t == nil {
		if ps := parStepFrom(ctx); ps != nil {
			return zero, fmt.Errorf("graph: durable step %q was called inside parallel step %q of node %q; steps do not nest: call it from the node", name, ps.name, ps.t.node.name)
		}
		return zero, fmt.Errorf("graph: durable step %q was called outside a graph node", name)
	}
	in := t.intr()
	if in.inStep != "" {
		return zero, fmt.Errorf("graph: durable step %q was called inside step %q of node %q; steps do not nest: call it from the node, after the step", name, in.inStep, t.node.name)
	}
	g := in.par // non-nil once the node started parallel steps (Go)
	g.lock()
	call := in.stepCalls
	in.stepCalls++
	saved, ok := in.step(call)
	g.unlock()
	if ok {
		if saved.Name != name {
			return zero, &NonDeterminismError{Node: t.node.name, TaskID: t.ID(), Call: call, Saved: saved.Name, Called: name}
		}
		// Interrupt calls made inside the step count as made, so the
		// node's later calls keep their indexes (and answers).
		in.calls += saved.Interrupts
		return decodeStep[T](t, saved)
	}
	asked := in.calls
	in.inStep = name
	v, err := fn(ctx)
	in.inStep = ""
	if err != nil {
		return zero, err
	}
	s, err := encodeStep(t, name, call, v)
	if err != nil {
		return zero, err
	}
	s.Interrupts = in.calls - asked
	if s.Interrupts > 0 {
		if s.enc, err = json.Marshal(s); err != nil {
			return zero, fmt.Errorf("graph: encode step %q of node %q: %w", name, t.node.name, err)
		}
	}
	if err := t.saveStep(s); err != nil {
		return zero, err
	}
	return decodeStep[T](t, s)
}

// encodeStep encodes a step's result and its record.
func encodeStep(t *task, name string, call int, v any) (wireStep, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return wireStep{}, fmt.Errorf("graph: encode the result of step %q of node %q: %w", name, t.node.name, err)
	}
	s := wireStep{Name: name, Call: call, Value: b}
	if s.enc, err = json.Marshal(s); err != nil {
		return wireStep{}, fmt.Errorf("graph: encode step %q of node %q: %w", name, t.node.name, err)
	}
	return s, nil
}

// saveStep adds a finished step to the task's steps and saves them; a step
// that could not be saved is dropped, so it runs again.
func (t *task) saveStep(s wireStep) error {
	in := t.in
	in.par.lock()
	defer in.par.unlock()
	in.addStep(s)
	if err := t.r.saveTask(t); err != nil {
		in.dropStep(s.Call)
		return fmt.Errorf("graph: save step %q: %w", s.Name, err)
	}
	return nil
}

// step returns the saved step of call index call. Steps are kept ordered by
// call index; parallel steps (Go) can leave gaps, as they finish in any
// order.
func (in *taskInterrupts) step(call int) (wireStep, bool) {
	i, ok := slices.BinarySearchFunc(in.steps, call, func(s wireStep, c int) int { return cmp.Compare(s.Call, c) })
	if !ok {
		return wireStep{}, false
	}
	return in.steps[i], true
}

// addStep inserts s in call order, and notes it last in save order;
// false when its call index is taken.
func (in *taskInterrupts) addStep(s wireStep) bool {
	i, ok := slices.BinarySearchFunc(in.steps, s.Call, func(s wireStep, c int) int { return cmp.Compare(s.Call, c) })
	if ok {
		return false
	}
	in.steps = slices.Insert(in.steps, i, s)
	in.stepOrder = append(in.stepOrder, s.Call)
	return true
}

func (in *taskInterrupts) dropStep(call int) {
	in.steps = slices.DeleteFunc(in.steps, func(s wireStep) bool { return s.Call == call })
	in.stepOrder = slices.DeleteFunc(in.stepOrder, func(c int) bool { return c == call })
}

// savedSteps yields the steps in the order they were saved, the order of
// their pending writes: a parallel step that finishes after a later call's
// then adds a write at the end, which a saver can append.
func (in *taskInterrupts) savedSteps(yield func(wireStep) bool) {
	for _, call := range in.stepOrder {
		if s, ok := in.step(call); ok && !yield(s) {
			return
		}
	}
}

func decodeStep[T any](t *task, s wireStep) (T, error) {
	var v T
	if err := json.Unmarshal(s.Value, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("graph: the saved result of step %q (call %d) of node %q does not decode as %T: %w", s.Name, s.Call, t.node.name, v, err)
	}
	return v, nil
}

// ErrNonDeterminism is wrapped by every *NonDeterminismError.
var ErrNonDeterminism = errors.New("graph: a re-run called its steps in another order than the saved run")

// NonDeterminismError is what Durable returns when a node that runs again
// calls its steps in another order than the run whose results were saved:
// call number Call is named Called now but was named Saved then. The
// node's code around its steps depends on something that changed (the
// clock, a random number, a map's order, a changed program): make it
// deterministic, or start the thread over.
type NonDeterminismError struct {
	Node   string // the node whose step calls differ
	TaskID string
	Call   int    // the index of the step call, from 0
	Saved  string // the name the saved call had
	Called string // the name the re-run gave
}

func (e *NonDeterminismError) Error() string {
	return fmt.Sprintf("graph: node %q called step %q as its step #%d, but the saved run's step #%d was %q: a re-run must call its steps in the same order (task %s)",
		e.Node, e.Called, e.Call, e.Call, e.Saved, e.TaskID)
}

// Unwrap makes errors.Is(err, ErrNonDeterminism) true.
func (e *NonDeterminismError) Unwrap() error { return ErrNonDeterminism }

// wireStep is a saved step result (checkpoint.WriteStep).
type wireStep struct {
	Name       string          `json:"name"`
	Call       int             `json:"call"`
	Interrupts int             `json:"interrupts,omitempty"` // Interrupt calls made inside the step
	Value      json.RawMessage `json:"value"`
	enc        []byte          // the whole record, encoded once: each save rewrites every step
}
