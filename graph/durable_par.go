package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// Go starts fn as a durable step that runs in parallel with the node and
// with the node's other parallel steps, and returns at once; Step.Wait
// returns its result. It is Durable's parallel form (LangGraph's tasks
// called together, then awaited): start several steps, then wait for
// them.
//
// The step's key is fixed when Go is called, not when fn finishes: it
// takes the next call index of the node's steps (shared with Durable), so
// code that calls Go and Durable in the same order gets the same keys
// whichever step finishes first. Each step is saved as soon as it
// finishes, under the run's durability (see Durable), so a re-run — after
// an interrupt, a failure or a crash — returns the saved results of the
// steps that finished and runs only the others. As with Durable, a re-run
// whose call i has another name than the saved call i gets a
// *NonDeterminismError, from Wait.
//
// fn runs on its own goroutine with a context that belongs to the step,
// not to the node: inside fn,
//
//   - Interrupt asks a question of its own (its ID names the step: the
//     node's task ID, "step", the call index and the step's own Interrupt
//     count), which stops the step, not the whole node: Wait returns the
//     interrupt's error, which the node returns; the other steps go on and
//     are saved if they finish; on resume the step runs again with the
//     answer, and only it;
//   - Emit's events are held and reach the stream when the node's
//     goroutine Waits for the step (or when the node returns);
//   - StoreFrom returns the run's store;
//   - Durable and Go are errors (steps do not nest), and the other
//     node-only calls (Messages, a nested graph run, RunInfo...) behave as
//     outside a node: run such work in the node, around the steps.
//
// A node must not return before its parallel steps end: when it returns
// (or fails, or panics), the engine waits for every step it started, so
// each one is saved or dropped before the task's own writes are. Cancel
// the node's context to stop them sooner. A panic in fn is the step's
// error (*PanicError), not the process's.
//
// Call Go from the node's goroutine, as Durable; Wait too, to get the
// step's events delivered. Outside a graph node, or inside another step,
// Wait returns an error.
func Go[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) *Future[T] {
	st := &Future[T]{done: make(chan struct{})}
	t := taskFrom(ctx)
	if t == nil {
		if ps := parStepFrom(ctx); ps != nil {
			st.err = fmt.Errorf("graph: durable step %q was started inside parallel step %q of node %q; steps do not nest: start it from the node", name, ps.name, ps.t.node.name)
		} else {
			st.err = fmt.Errorf("graph: parallel step %q was started outside a graph node", name)
		}
		close(st.done)
		return st
	}
	in := t.intr()
	if in.inStep != "" {
		st.err = fmt.Errorf("graph: parallel step %q was started inside step %q of node %q; steps do not nest: start it from the node, after the step", name, in.inStep, t.node.name)
		close(st.done)
		return st
	}
	if in.par == nil {
		in.par = &stepGroup{}
	}
	g := in.par
	g.lock()
	call := in.stepCalls
	in.stepCalls++
	saved, ok := in.step(call)
	var answers map[string]json.RawMessage
	prefix := stepInterruptPrefix(t.ID(), call)
	for id, v := range in.nested {
		if strings.HasPrefix(id, prefix) {
			if answers == nil {
				answers = map[string]json.RawMessage{}
			}
			answers[id] = v
		}
	}
	g.unlock()
	st.t = t
	if ok {
		if saved.Name != name {
			st.err = &NonDeterminismError{Node: t.node.name, TaskID: t.ID(), Call: call, Saved: saved.Name, Called: name}
		} else {
			st.v, st.err = decodeStep[T](t, saved)
		}
		close(st.done)
		return st
	}
	ps := &parStep{t: t, name: name, call: call, prefix: prefix, answers: answers}
	st.ps = ps
	g.wg.Add(1)
	g.open = append(g.open, ps)
	sctx := stepCtx{ctx, ps}
	go func() {
		defer g.wg.Done()
		defer close(st.done)
		v, err := callStep(sctx, fn)
		if err != nil {
			ps.mu.Lock()
			raised := ps.raised
			ps.mu.Unlock()
			if len(raised) > 0 {
				g.lock()
				in.raised = append(in.raised, raised...)
				g.unlock()
			}
			st.err = err
			return
		}
		s, err := encodeStep(t, name, call, v)
		if err == nil {
			err = t.saveStep(s)
		}
		if err != nil {
			st.err = err
			return
		}
		st.v, st.err = decodeStep[T](t, s)
	}()
	return st
}

// callStep runs a parallel step's function, turning a panic into its error.
func callStep[T any](ctx context.Context, fn func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}

// Future is a parallel durable step started with Go: its result to come.
type Future[T any] struct {
	done chan struct{}
	t    *task
	ps   *parStep // nil when the result was restored or Go failed
	v    T
	err  error
}

// Wait waits for the step to end and returns its result, decoded from its
// saved JSON as Durable's, or its error: fn's (the step was not saved and
// runs again next time), an *InterruptError when fn asked a question, a
// *NonDeterminismError, or ctx's error if ctx ends first (the step goes
// on). Called with the node's context, it also delivers the events the
// step emitted. Wait may be called several times.
func (s *Future[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
	if s.ps != nil && taskFrom(ctx) == s.t {
		s.ps.flush()
	}
	return s.v, s.err
}

// Done is closed when the step has ended, to select on several steps.
func (s *Future[T]) Done() <-chan struct{} { return s.done }

// stepGroup is a task's parallel steps.
type stepGroup struct {
	mu   sync.Mutex // guards the task's steps and interrupt bookkeeping while steps run
	wg   sync.WaitGroup
	open []*parStep
}

// lock and unlock guard the task's bookkeeping once it has parallel steps;
// on a nil group (none started) they do nothing.
func (g *stepGroup) lock() {
	if g != nil {
		g.mu.Lock()
	}
}

func (g *stepGroup) unlock() {
	if g != nil {
		g.mu.Unlock()
	}
}

// joinSteps waits for the task's parallel steps and delivers their held
// events; the task's goroutine calls it when the node returns.
func (t *task) joinSteps() {
	if t.in == nil || t.in.par == nil {
		return
	}
	g := t.in.par
	g.wg.Wait()
	for _, ps := range g.open {
		ps.flush()
	}
	t.in.par = nil
}

// parStep is a running parallel step.
type parStep struct {
	t       *task
	name    string
	call    int
	prefix  string                     // the IDs of its interrupts start with it
	answers map[string]json.RawMessage // answers to its interrupts, by ID

	mu     sync.Mutex
	asked  int // Interrupt calls so far
	raised []InterruptInfo
	events []any
}

// flush delivers the step's held events, on the task's goroutine.
func (ps *parStep) flush() {
	ps.mu.Lock()
	evs := ps.events
	ps.events = nil
	ps.mu.Unlock()
	for _, v := range evs {
		if ps.t.r.wants(EventCustom) {
			ps.t.emit(Event{Kind: EventCustom, Custom: v})
		}
	}
}

// emit holds an event of the step for the node's goroutine.
func (ps *parStep) emit(v any) {
	ps.mu.Lock()
	ps.events = append(ps.events, v)
	ps.mu.Unlock()
}

// interrupt is Interrupt inside a parallel step: it returns the answer
// to the step's next Interrupt call, or raises it.
func (ps *parStep) interrupt(payload any, opts []InterruptOption) (json.RawMessage, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	id := ps.prefix + strconv.Itoa(ps.asked)
	ps.asked++
	if a, ok := ps.answers[id]; ok {
		return a, nil
	}
	if ps.t.r.cfg.saver == nil {
		return nil, fmt.Errorf("graph: parallel step %q of node %q called Interrupt, but the run has no checkpointer to wait with; pass WithCheckpointer and WithThread", ps.name, ps.t.node.name)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("graph: encode the payload of interrupt %s: %w", id, err)
	}
	info := InterruptInfo{ID: id, Node: ps.t.node.name, Namespace: ps.t.r.ns, Kind: InterruptNode, Payload: p}
	for _, o := range opts {
		o(&info)
	}
	ps.raised = append(ps.raised, info)
	return nil, &InterruptError{Interrupts: []InterruptInfo{info}}
}

// stepInterruptPrefix is how the IDs of a parallel step's interrupts start.
func stepInterruptPrefix(taskID string, call int) string {
	return taskID + ":step" + strconv.Itoa(call) + ":"
}

type parStepKey struct{}

// stepCtx is a parallel step's context: the node's, without the task (so
// that node-only calls from the step's goroutine cannot touch it), with the
// step.
type stepCtx struct {
	context.Context
	s *parStep
}

func (c stepCtx) Value(key any) any {
	switch key {
	case taskKey{}:
		return nil
	case parStepKey{}:
		return c.s
	}
	return c.Context.Value(key)
}

func parStepFrom(ctx context.Context) *parStep {
	s, _ := ctx.Value(parStepKey{}).(*parStep)
	return s
}
