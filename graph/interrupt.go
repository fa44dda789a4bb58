package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrInterrupted is wrapped by the error of a run that stopped to wait for a
// person's answer. The run's Result lists the interrupts; resume the thread
// with Invoke(ctx, nil, WithResume(answer)) or WithResumeMap.
var ErrInterrupted = errors.New("graph: run interrupted, waiting for an answer")

// InterruptError is the error Interrupt returns to its node and the error of
// an interrupted run. Nodes return it as is.
type InterruptError struct {
	Interrupts []InterruptInfo
	run        bool // raised by a whole (nested) run, not by one Interrupt call
}

func (e *InterruptError) Error() string {
	ids := make([]string, len(e.Interrupts))
	for i, in := range e.Interrupts {
		ids[i] = in.ID
	}
	return fmt.Sprintf("%v: %s", ErrInterrupted, strings.Join(ids, ", "))
}

// Unwrap makes errors.Is(err, ErrInterrupted) true.
func (e *InterruptError) Unwrap() error { return ErrInterrupted }

// Interrupt asks a person for an answer from inside a node. The first time
// it records the question (payload, encoded as JSON) and returns an
// *InterruptError, which the node should return as is; the task counts as
// interrupted whatever the node does with it, and the run stops after the
// step's other tasks finish. When the thread is resumed with an answer, the
// node runs again from the top and Interrupt returns the answer decoded into
// T — always through JSON, so an answer given in another process behaves the
// same.
//
// A node may call Interrupt several times: calls are matched with answers by
// their order, and each call has its own ID (the task's ID and the call's
// index), so parallel tasks' interrupts never share one. Anything the node
// does before an Interrupt call runs again on resume: keep side effects after
// it. Interrupts need a checkpointer (WithCheckpointer and WithThread).
// Call Interrupt from the node's own goroutine, as with testing.T.Fatal.
func Interrupt[T any](ctx context.Context, payload any, opts ...InterruptOption) (T, error) {
	var zero T
	t := taskFrom(ctx)
	if t == nil {
		if ps := parStepFrom(ctx); ps != nil {
			answer, err := ps.interrupt(payload, opts)
			if err != nil {
				return zero, err
			}
			var v T
			if err := json.Unmarshal(answer, &v); err != nil {
				return zero, fmt.Errorf("graph: the answer to interrupt %s of parallel step %q does not decode as %T: %w", ps.prefix, ps.name, v, err)
			}
			return v, nil
		}
		return zero, errors.New("graph: Interrupt was called outside a graph node")
	}
	in := t.intr()
	call := in.calls
	in.calls++
	answer, answered := in.answers[call]
	id := t.ID() + ":" + strconv.Itoa(call)
	if answered {
		var v T
		if err := json.Unmarshal(answer, &v); err != nil {
			return zero, fmt.Errorf("graph: the answer to interrupt %s does not decode as %T: %w", id, v, err)
		}
		return v, nil
	}
	if t.r.cfg.saver == nil {
		return zero, fmt.Errorf("graph: node %q called Interrupt, but the run has no checkpointer to wait with; pass WithCheckpointer and WithThread", t.node.name)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return zero, fmt.Errorf("graph: encode the payload of interrupt %s: %w", id, err)
	}
	info := InterruptInfo{ID: id, Node: t.node.name, Namespace: t.r.ns, Kind: InterruptNode, Payload: p}
	for _, o := range opts {
		o(&info)
	}
	in.par.lock() // parallel steps (Go) may be saving the task
	in.raised = append(in.raised, info)
	in.par.unlock()
	return zero, &InterruptError{Interrupts: []InterruptInfo{info}}
}

// InterruptOption describes an interrupt further (see ExpectAnswer).
type InterruptOption func(*InterruptInfo)

// ExpectAnswer records the JSON Schema of the answer the node expects in
// InterruptInfo.Schema, so that clients can show the person a form and
// check the answer before sending it (LangGraph's response schema). The
// engine does not validate answers against it: the node decodes and checks
// what it gets.
func ExpectAnswer(schema json.RawMessage) InterruptOption {
	return func(in *InterruptInfo) { in.Schema = schema }
}

// WithResume answers the one interrupt the thread is waiting for. With
// several node interrupts waiting it is an error that lists them: answer
// them with WithResumeMap. Breakpoints waiting beside it are passed; with
// only breakpoints waiting, the value is not used. A nil answer to a node's
// interrupt is an error: a node always gets a value (answer
// json.RawMessage("null") to send a JSON null on purpose).
func WithResume(answer any) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().resume, c.rare().resumeOne = answer, true })
}

// WithResumeMap answers interrupts by ID (see InterruptInfo.ID). Answering
// only some of them re-runs only the tasks they belong to; the run then
// stops again for the rest. An ID nothing waits for is an error listing
// what waits; a nil answer to a node interrupt is an error (as for
// WithResume). An empty map answers nothing: like a nil input, it passes
// the waiting breakpoints and leaves node interrupts waiting.
func WithResumeMap(answers map[string]any) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().resumeMap = answers })
}

// AllNodes, passed to WithInterruptBefore or WithInterruptAfter, matches
// every node.
const AllNodes = "*"

// WithInterruptBefore stops the run before a step that would run one of
// these nodes (a static breakpoint). A node inside a subgraph is named by
// its path: "writer/review" is node review of the subgraph node writer
// (AddSubgraph, or a graph the node writer invokes); "writer/*" is every
// node of it. The breakpoint is a pending interrupt of kind
// InterruptBefore: resuming (a nil input, with or without an answer) runs
// the step, passing it once.
func WithInterruptBefore(nodes ...string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().before = append(c.rare().before, nodes...) })
}

// WithInterruptAfter stops the run after a step that ran one of these nodes
// and has been saved; nodes are named as for WithInterruptBefore. The
// breakpoint is a pending interrupt of kind InterruptAfter: resuming (a nil
// input, with or without an answer) goes on, passing it once.
func WithInterruptAfter(nodes ...string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().after = append(c.rare().after, nodes...) })
}

func matches(list []string, node string) bool {
	return slices.Contains(list, node) || slices.Contains(list, AllNodes)
}

// wire forms of the reserved pending writes.
type (
	wireRoutes struct {
		Goto    bool         `json:"goto,omitempty"`
		Targets []wireTarget `json:"targets"`
	}
	wireTarget struct {
		Node    string          `json:"node"`
		Send    bool            `json:"send,omitempty"`
		Payload json.RawMessage `json:"payload,omitempty"`
		Task    string          `json:"task,omitempty"` // a command's target: the ID of its task
	}
	wireInterrupt struct {
		InterruptInfo
		Call   int    `json:"call"`             // the Interrupt call index; -1 for a nested run's or a static one
		Static string `json:"static,omitempty"` // "before" or "after" for breakpoints
	}
	wireAnswer struct {
		ID    string          `json:"id"`
		Value json.RawMessage `json:"value"`
	}
)

// resume hands the answers of WithResume/WithResumeMap (or, for a nested
// run, its parent task's) to the restored tasks. A top-level run that goes
// on (nil input) passes every breakpoint waiting, with or without a value.
func (r *run) resume(resumed bool, input Update) error {
	top := r.parent == nil
	given := r.cfg.get().resumeOne || r.cfg.get().resumeMap != nil
	switch {
	case !resumed && given:
		return fmt.Errorf("graph: thread %q has no checkpoint to resume", r.cfg.thread)
	case !resumed:
		return nil
	case given && input != nil:
		return errors.New("graph: resume answers go with a nil input; the answer is the input")
	case !top:
		return r.answerAll(r.parent.in.nestedMap(), false)
	case input != nil:
		return nil // new input starts over from START; what waited is dropped
	}
	waiting := r.waitingFor()
	kinds := map[string]InterruptKind{}
	var nodes []InterruptInfo
	for _, w := range waiting {
		kinds[w.ID] = w.Kind
		if !w.Breakpoint() {
			nodes = append(nodes, w)
		}
	}
	answers := map[string]json.RawMessage{}
	encode := func(id string, v any) error {
		if v == nil && kinds[id] == InterruptNode {
			return fmt.Errorf("graph: the answer to interrupt %s is nil; give the node a value (json.RawMessage(\"null\") sends a JSON null on purpose)", id)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("graph: encode the answer to %s: %w", id, err)
		}
		answers[id] = b
		return nil
	}
	if r.cfg.get().resumeOne {
		switch {
		case len(waiting) == 0:
			return fmt.Errorf("graph: thread %q has no interrupt waiting for an answer", r.cfg.thread)
		case len(nodes) == 1:
			if err := encode(nodes[0].ID, r.cfg.get().resume); err != nil {
				return err
			}
		case len(nodes) > 1:
			return fmt.Errorf("graph: %d interrupts are waiting, so one answer is ambiguous; answer them by ID with WithResumeMap: %s", len(nodes), ids(nodes))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.cfg.get().resumeMap)) {
		if _, ok := kinds[id]; !ok {
			return fmt.Errorf("graph: no interrupt %q is waiting for an answer; waiting: %s", id, ids(waiting))
		}
		if err := encode(id, r.cfg.get().resumeMap[id]); err != nil {
			return err
		}
	}
	for _, w := range waiting {
		if _, ok := answers[w.ID]; !ok && w.Breakpoint() {
			answers[w.ID] = json.RawMessage("null") // going on passes it
		}
	}
	return r.answerAll(answers, true)
}

// interrupted ends a step whose tasks raised interrupts: the step does not
// commit; finished siblings' writes are already saved as pending writes.
func (r *run) interrupted(waiting []InterruptInfo) error {
	if r.wants(EventInterrupt) {
		r.deliver(Event{Kind: EventInterrupt, Step: r.step, Namespace: r.ns, Interrupts: waiting})
	}
	return &InterruptError{Interrupts: waiting, run: true}
}

// breakBefore stops before a step that would run a node named in
// WithInterruptBefore, unless the run is resuming past that breakpoint.
func (r *run) breakBefore() error {
	var waiting []InterruptInfo
	for _, t := range r.next {
		if r.breaksBefore(t.node.name) && !t.passed {
			t.passed = true
			waiting = append(waiting, r.breakpoint(t, InterruptBefore).InterruptInfo)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	if r.cfg.saver == nil {
		return errors.New("graph: WithInterruptBefore needs a checkpointer to stop and resume; pass WithCheckpointer and WithThread")
	}
	for _, t := range r.next {
		if t.passed && !t.done && len(t.in.priorList()) == 0 {
			if err := r.saveTask(t); err != nil {
				return err
			}
		}
	}
	return r.interrupted(waiting)
}

// breakAfter stops after a committed step that ran a node named in
// WithInterruptAfter — including a task that finished in an earlier attempt
// of the step, before a sibling's interrupt stopped it. The breakpoint is
// saved with the step's checkpoint and listed as waiting until a resume
// passes it.
func (r *run) breakAfter(tasks []*task) error {
	var marks []afterMark
	for _, t := range tasks {
		if t.node.idx >= 0 && r.breaksAfter(t.node.name) {
			marks = append(marks, afterMark{task: t.ID(), info: r.breakpoint(t, InterruptAfter).InterruptInfo})
		}
	}
	if len(marks) == 0 {
		return nil
	}
	if r.cfg.saver == nil {
		return errors.New("graph: WithInterruptAfter needs a checkpointer to stop and resume; pass WithCheckpointer and WithThread")
	}
	waiting := make([]InterruptInfo, len(marks))
	for i, m := range marks {
		waiting[i] = m.info
		if r.cfg.durability == DurabilityExit {
			r.extra().raisedAfter = append(r.extra().raisedAfter, m)
		} else if err := r.saveAfter(m); err != nil {
			return err
		}
	}
	return r.interrupted(waiting)
}

// breaksBefore and breaksAfter report whether the run stops before or
// after node.
func (r *run) breaksBefore(node string) bool { return matches(r.cfg.get().before, node) }
func (r *run) breaksAfter(node string) bool  { return matches(r.cfg.get().after, node) }
