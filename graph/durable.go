package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// failed (a crash repeats them all). Each save rewrites the task's pending
// writes, so a node with n steps writes O(n²) bytes over its run: split a
// long series of steps over several nodes. Without a checkpointer, steps
// are kept in memory for the task's retries only.
//
// Call Durable from the node's own goroutine (as Interrupt), one step at a
// time: steps do not nest, and calling Durable inside a step's fn is an error.
// Outside a graph node Durable is an error.
func Durable[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	t := taskFrom(ctx)
	if t == nil {
		return zero, fmt.Errorf("graph: durable step %q was called outside a graph node", name)
	}
	in := t.intr()
	if in.inStep != "" {
		return zero, fmt.Errorf("graph: durable step %q was called inside step %q of node %q; steps do not nest: call it from the node, after the step", name, in.inStep, t.node.name)
	}
	call := in.stepCalls
	in.stepCalls++
	if call < len(in.steps) {
		saved := in.steps[call]
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
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("graph: encode the result of step %q of node %q: %w", name, t.node.name, err)
	}
	s := wireStep{Name: name, Call: call, Interrupts: in.calls - asked, Value: b}
	if s.enc, err = json.Marshal(s); err != nil {
		return zero, fmt.Errorf("graph: encode step %q of node %q: %w", name, t.node.name, err)
	}
	in.steps = append(in.steps, s)
	if err := t.r.saveTask(t); err != nil {
		in.steps = in.steps[:call] // not saved: it runs again
		return zero, fmt.Errorf("graph: save step %q: %w", name, err)
	}
	return decodeStep[T](t, s)
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
