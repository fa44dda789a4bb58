package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"
)

// task is one execution of a node in a step. While the node runs, the task
// is also its context (embedding the step's context), which saves an
// allocation per task and lets RemainingSteps and friends find it.
type task struct {
	context.Context
	r       *run
	node    *cnode
	payload any // a Send's payload
	writes  Update
	// routes are the targets the node chose: its Command's Goto when
	// viaGoto (its edges are then not followed), or else the targets of its
	// conditional and fan-out edges.
	routes   []Target
	err      error
	hash     fnv128 // the task ID's hash, computed on first use (see sum)
	dur      time.Duration
	in       *taskInterrupts // allocated when the task interrupts or is answered
	step     int             // the step the task runs in
	idx      int32           // position in the step; writes apply in this order
	seq      int32           // for pushed (Send) tasks: order among the step's sends
	attempts int32
	done     bool // finished in an earlier run: its writes were restored
	ran      bool // its node ran (to an output, an error or an interrupt)
	waiting  bool // interrupted earlier and not answered: does not run
	passed   bool // past its static interrupt-before breakpoint
	push     bool
	hashed   bool
	inline   bool // runs on the loop's goroutine
	skipped  bool // a parallel task that never ran: its step failed first
	viaGoto  bool
	restored bool // scheduled by the checkpoint the run started from, not by this run
	child    bool // a nested run with a checkpointer started in the task's context (see freshChild)
}

// taskInterrupts is a task's interrupt bookkeeping, kept apart so that the
// common task that never interrupts stays small.
type taskInterrupts struct {
	calls   int                        // Interrupt calls so far in this execution
	answers map[int]json.RawMessage    // answers to the task's own calls, by call index
	nested  map[string]json.RawMessage // answers for interrupts of runs nested in it, by ID
	raised  []InterruptInfo            // interrupts raised (or still waiting) this step
	prior   []wireInterrupt            // interrupts restored from the checkpoint
	// not about interrupts, but as rare: what scheduled the task (kept
	// only when task events are streamed) and the error text of its
	// failed attempt, restored for snapshots
	triggers []string
	lastErr  string
	cached   bool // its output came from the node cache
	// durable steps (see Durable): the results saved so far, by call index,
	// the Durable calls of this execution, and the step running now
	steps     []wireStep
	stepOrder []int // the call indexes of steps, in the order they were saved
	stepCalls int
	inStep    string
	par       *stepGroup  // parallel steps (Go), nil until the node starts one
	saved     savedWrites // what the last save of the task's pending writes stored
}

// intr returns the task's interrupt bookkeeping, allocating it. Only the
// task's own goroutine (or the loop, outside a step) calls it.
func (t *task) intr() *taskInterrupts {
	if t.in == nil {
		t.in = &taskInterrupts{}
	}
	return t.in
}

// The accessors below are safe on a nil *taskInterrupts.
func (in *taskInterrupts) raisedList() []InterruptInfo {
	if in == nil {
		return nil
	}
	return in.raised
}

func (in *taskInterrupts) priorList() []wireInterrupt {
	if in == nil {
		return nil
	}
	return in.prior
}

func (in *taskInterrupts) answerMap() map[int]json.RawMessage {
	if in == nil {
		return nil
	}
	return in.answers
}

func (in *taskInterrupts) nestedMap() map[string]json.RawMessage {
	if in == nil {
		return nil
	}
	return in.nested
}

// Value makes the task findable from its node's context.
func (t *task) Value(key any) any {
	if key == (taskKey{}) {
		return t
	}
	return t.Context.Value(key)
}

// path orders the task among its step's tasks and feeds its ID.
func (t *task) path() string {
	if t.push {
		return "send:" + strconv.Itoa(int(t.seq))
	}
	if t.node.wirePath != "" {
		return t.node.wirePath
	}
	return "node:" + t.node.name
}

// ID returns the task's deterministic ID: a hash of the thread, the
// checkpoint the step started from, the namespace, the step and the task's
// path. The same task of the same thread step has the same ID in every
// process, which is what pending writes and interrupts are keyed on.
func (t *task) ID() string { return t.sum().hex() }

// sum computes the ID's hash without formatting it.
func (t *task) sum() fnv128 {
	if !t.hashed {
		h := t.r.idPrefix()
		finishID(&h, t.step, t.push, t.seq, t.node.name)
		t.hash, t.hashed = h, true
	}
	return t.hash
}

// freshChild records a nested run with a checkpointer started in the
// task's context and reports whether its namespace (childNamespace) is
// certainly empty, so that the nested run need not read its latest
// checkpoint. It is when the task's ID derives from a checkpoint ID this
// very run drew (no earlier run, crashed or not, can have used it: a task
// this run scheduled got its ID in the save that drew r.cpID, which stays
// until the step commits; a task whose ID was given from storage, such as
// a command target's, is not: see derivesFromRun), and this is the first
// nested run of the task's
// first attempt (a retry, or a second Invoke from the same node, finds
// what the first one saved). A Stateful subgraph's namespace outlives its
// invocations. Should the assumption ever be wrong, the nested run's first
// Put names no head and the saver refuses it (checkpoint.ErrConflict):
// nothing is overwritten. Called from the task's goroutine; nested runs
// with a checkpointer started concurrently from one task would share a
// namespace, which their Puts refuse already; the flag is read and set
// under childMu all the same, as a node's goroutines may start nested
// runs at once.
func (t *task) freshChild() bool {
	childMu.Lock()
	first := !t.child
	t.child = true
	childMu.Unlock()
	return first && t.childUnsaved()
}

// childUnsaved reports whether no earlier attempt of t, and no earlier
// run of the thread, can have saved in t's child namespace, given that t
// started no nested run yet (freshChild's test, without its mark; see
// FreshNamespace too).
func (t *task) childUnsaved() bool {
	return t.r.ownCP && t.r.cpID != "" && !t.restored && !t.done && t.attempts <= 1 && !t.node.stateful && t.derivesFromRun()
}

// derivesFromRun reports whether the task's ID is the one derived from
// the checkpoint the run's step follows (r.cpID), and not one given from
// storage: a restored task's, or a command target's that its saved
// record names (an earlier attempt's, whose nested runs may have saved).
func (t *task) derivesFromRun() bool {
	h := t.r.idPrefix()
	finishID(&h, t.step, t.push, t.seq, t.node.name)
	return h == t.sum()
}

// childMu guards task.child: a lock shared by every task, taken once per
// nested run, costs the task struct nothing (see TestHotStructSizes).
var childMu sync.Mutex

// idPrefix hashes what the IDs of a step's tasks share: the thread, the
// checkpoint the step started from and the namespace.
//
// The thread's part is hashed once per run, when the run takes its
// buffers: a run with a saver draws a checkpoint ID at every step, so the
// prefix is hashed again at every step. A run without buffers, or whose
// thread is not the one hashed, hashes the thread here.
func (r *run) idPrefix() fnv128 {
	var h fnv128
	if b := r.b; b != nil && b.thrOK && b.thrOf == r.cfg.thread {
		h = b.thr
	} else {
		h = threadHash(r.cfg.thread)
	}
	mixWords(&h, r.cpID)
	h.add(r.ns)
	return h
}

// threadHash starts a task ID's hash with its thread.
func threadHash(thread string) fnv128 {
	h := newFNV128()
	h.add(thread)
	return h
}

// finishID adds a task's step and path to its ID's prefix.
func finishID(h *fnv128, step int, push bool, seq int32, node string) {
	h.addInt(step)
	if push {
		h.add("send")
		h.addInt(int(seq))
	} else {
		h.add("node")
		h.add(node)
	}
}

func (t *task) childNamespace() string {
	own := t.node.name + ":" + t.ID()
	if t.node.stateful {
		own = t.node.name // one namespace across invocations (Stateful)
	}
	if t.r.ns == "" {
		return own
	}
	return t.r.ns + "|" + own
}

// emit stamps an event with the task's coordinates and sends it to the run's
// stream: directly when the task runs on the loop's goroutine, through the
// step's channel otherwise.
func (t *task) emit(ev Event) {
	ev.Step, ev.Node, ev.TaskID, ev.Namespace = t.step, t.node.name, t.ID(), t.r.ns
	t.forward(ev)
}

// forward sends an already stamped event (from a nested run) on.
func (t *task) forward(ev Event) {
	if !t.r.wants(ev.Kind) {
		return
	}
	if t.inline {
		t.r.deliver(ev)
		return
	}
	t.r.evch <- ev
}

// runTasks executes a step's tasks: one inline on the loop's goroutine, or
// several in parallel. The first failure cancels the others; runTasks
// returns only when every task has stopped.
func (r *run) runTasks(all []*task) (err error) {
	start := r.lastEnd
	r.lastEnd = 0
	tasks := all
	for i, t := range all {
		if t.done || t.waiting { // finished earlier, or still waiting for an answer
			tasks = slices.Clone(all[:i])
			for _, t := range all[i:] {
				if !t.done && !t.waiting {
					tasks = append(tasks, t)
				}
			}
			break
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	r.dirty = true // DurabilityExit saves at the end what ran
	if r.wants(EventTaskStart) {
		for _, t := range tasks {
			info := TaskInfo{Attempt: 1, Input: r.state, Payload: t.payload}
			if t.in != nil {
				info.Triggers = t.in.triggers
			}
			r.deliver(Event{Kind: EventTaskStart, Step: r.step, Node: t.node.name, TaskID: t.ID(), Namespace: r.ns, Task: info})
		}
	}
	base := r.ctx
	if o := r.observer(); o != nil {
		var end func(OpEnd)
		base, end = o.Start(base, Op{Kind: OpStep, Step: r.step, Namespace: r.ns, Tasks: len(tasks)})
		defer func() { end(OpEnd{Err: err}) }()
	}
	if len(tasks) == 1 {
		t := tasks[0]
		t.Context, t.inline = base, true
		if start == 0 {
			start = monotonic()
		}
		end := r.execAt(t, start)
		// A task that finished alone commits with its step right away, and
		// the checkpoint holds its writes: saving them as pending writes
		// too would only cost a round trip. An interrupted or failed task,
		// or one whose step waits on an unanswered sibling, saves them
		// (a step of one task has no sibling: t is not waiting).
		if len(t.in.raisedList()) > 0 || t.err != nil || len(all) > 1 && waitingIn(all) {
			if err := r.saveTask(t); err != nil && t.err == nil {
				t.err = err
			}
		}
		r.b.marks[len(r.g.nodes)+t.node.idx]++ // runCounts()[t.node.idx], in fewer bounds checks
		if r.wants(EventTaskEnd) {
			r.taskEnd(t)
		}
		if t.err != nil {
			return t.err
		}
		if r.clockCarries() { // (an interrupt ends the run: nothing reads it then)
			r.lastEnd = end
		}
		return nil
	}
	return r.runParallel(base, tasks)
}

// nestedInterrupts records the interrupts of a nested run the node
// returned (kept out of exec so its error target stays off the heap).
func (t *task) nestedInterrupts(err error) {
	var ie *InterruptError
	if errors.As(err, &ie) && ie.run {
		t.intr().raised = append(t.intr().raised, ie.Interrupts...) // a nested run is waiting
	}
}

func waitingIn(tasks []*task) bool {
	for _, t := range tasks {
		if t.waiting {
			return true
		}
	}
	return false
}

// taskEnd sends the EventTaskEnd of a task that ran alone in its step.
func (r *run) taskEnd(t *task) {
	r.deliver(Event{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, TaskID: t.ID(), Namespace: r.ns, Task: t.endInfo()})
}

// endInfo describes a task that stopped, for EventTaskEnd.
func (t *task) endInfo() TaskInfo {
	info := TaskInfo{Attempt: int(t.attempts), Duration: t.dur, Err: t.err, Usage: t.usageOf(), Interrupts: t.in.raisedList(), Cached: t.in != nil && t.in.cached}
	if t.err == nil && len(info.Interrupts) == 0 {
		info.Result = t.writes
	}
	return info
}

// execAt runs one task with its retry policy and timeout, then checks its
// writes and evaluates its outgoing edges. It sets t.err rather than
// returning it. The task's duration counts from start (a reading of
// monotonic), and execAt returns the clock when it ended: a worker that
// runs tasks back to back starts the next one at this one's end (see
// worker).
//
// The clock is read after execTask returns, not in a deferred call: with
// its many returns, execTask's defers could not be open-coded, and the
// deferred call cost a parallel task 3 % of its CPU time. A node's panic
// is recovered below (see call), so execTask returns normally.
func (r *run) execAt(t *task, start time.Duration) time.Duration {
	if o := r.observer(); o != nil {
		r.execObserved(t, start, o)
	} else {
		r.execTask(t)
	}
	end := monotonic()
	t.dur = end - start
	return end
}

// execObserved is execTask reported to an observer as an OpTask operation.
func (r *run) execObserved(t *task, start time.Duration, o Observer) {
	var end func(OpEnd)
	t.Context, end = o.Start(t.Context, Op{Kind: OpTask, Step: r.step, Namespace: r.ns, Node: t.node.name, TaskID: t.ID()})
	defer func() {
		t.dur = monotonic() - start
		info := t.endInfo()
		end(OpEnd{Err: t.err, Task: info})
	}()
	r.execTask(t)
}

// execTask runs the task's node (through the cache and its retry policy),
// checks its writes and evaluates its outgoing edges, setting t.err on
// failure.
func (r *run) execTask(t *task) {
	n := t.node
	if t.push && !n.takesPayload {
		t.err = r.nodeErr(t, fmt.Errorf("it received a Send payload (%T) but takes none; add it with graph.AddSendNode to receive payloads", t.payload))
		return
	}
	if t.push && !n.acceptsPayload(t.payload) {
		t.err = r.nodeErr(t, fmt.Errorf("it takes a payload of type %s, but a Send gave it %T", n.payloadType, t.payload))
		return
	}
	var out Output
	var err error
	var cacheKey string
	if n.cache != nil {
		if c := r.cfg.get().cache; c != nil {
			hit, key, err := r.cacheLookup(t, c)
			switch {
			case err != nil:
				t.attempts, t.ran = 1, true
				t.err = r.nodeErr(t, err)
				return
			case hit:
				t.attempts, t.ran = 1, true
				r.route(t)
				return
			}
			cacheKey = key
		}
	}
	for t.attempts = 1; ; t.attempts++ {
		if t.in != nil {
			t.in.calls, t.in.stepCalls, t.in.inStep = 0, 0, ""
		}
		t.writes = nil // what an earlier attempt added (see AddWrites)
		out, err = t.call()
		if err == nil || len(t.in.raisedList()) > 0 || n.retry == nil || t.Err() != nil {
			break
		}
		p := n.retry.pick(int(t.attempts), err)
		if p == nil {
			break
		}
		if werr := p.wait(t, int(t.attempts)); werr != nil {
			break // the run was cancelled while waiting; report the node's error
		}
	}
	t.ran = true
	added := t.writes // kept only if the node succeeds
	t.writes = nil
	if err != nil {
		t.nestedInterrupts(err)
		if cmd, ok := t.fromChild(err); ok {
			out, err = cmd, nil
		}
	}
	if len(t.in.raisedList()) > 0 {
		// Interrupted, whatever the node did with the error: its writes
		// are dropped and it runs again once answered.
		return
	}
	if err != nil {
		t.err = r.nodeErr(t, err)
		return
	}
	if p, ok := out.(*Command); ok && p != nil {
		out = *p
	}
	switch o := out.(type) {
	case nil, *Command:
		t.writes = added
	case Update:
		t.writes = joinWrites(added, o)
	case Command:
		if o.Parent {
			// At the root too: the caller sees where it tried to go.
			t.err = &ParentCommandError{Command: o, Namespace: r.ns, Node: n.name}
			return
		}
		t.writes = joinWrites(added, o.Update)
		if len(o.Goto) > 0 {
			t.routes, t.viaGoto = o.Goto, true
		}
	}
	if !r.oneGoodWrite(t) { // a node's one write is tested without checkWrites' loop and call
		if err := r.checkWrites(t); err != nil {
			t.err = r.nodeErr(t, err)
			return
		}
	}
	if t.viaGoto {
		for _, tg := range t.routes {
			if _, ok := n.gotos[tg.node]; !ok {
				t.err = r.nodeErr(t, fmt.Errorf("its Command goes to %q, which it does not declare; add graph.Destinations(%q) to the node (declared: %v)", tg.node, tg.node, n.dests))
				return
			}
		}
	}
	if cacheKey != "" {
		if err := r.cacheStore(t, r.cfg.get().cache, cacheKey); err != nil {
			t.err = r.nodeErr(t, err)
			return
		}
	}
	if !t.viaGoto && len(n.conds)+len(n.fans) > 0 {
		r.route(t)
	}
}

// route evaluates a finished task's conditional and fan-out edges (not
// when its Command chose where to go).
func (r *run) route(t *task) {
	n := t.node
	if t.viaGoto || len(n.conds)+len(n.fans) == 0 {
		return
	}
	view := r.state
	if len(t.writes) > 0 {
		view = r.state.clone()
		if err := r.applyOwn(view, t); err != nil {
			t.err = r.nodeErr(t, err)
			return
		}
	}
	if err := t.route(view); err != nil {
		t.err = r.nodeErr(t, err)
	}
}

// clockBase is what monotonic measures from.
var clockBase = time.Now()

// monotonic reads the monotonic clock only: time.Now also reads the wall
// clock, a second system clock read per call that a task's duration does
// not need (two of the three reads per task were a tenth of a chain's CPU
// time).
func monotonic() time.Duration { return time.Since(clockBase) }

// clockCarries reports whether the clock reading that ends one step's task
// may start the next step's: in a run without a checkpointer, events, an
// observer or a Control, what runs between them is the engine's commit (the
// step's reducers included), which waits on nothing, so one reading serves
// both (two readings a step were an eighth of a chain's engine time on a
// host whose clock read costs 30 ns). A task's duration then includes the
// commit before it, well under a microsecond with the built-in reducers.
func (r *run) clockCarries() bool {
	return r.cfg.saver == nil && r.kinds == 0 && r.cfg.control == nil && r.observer() == nil
}

// fromChild turns a Command a subgraph run (or a graph the node invoked)
// sent to its parent into this task's output.
func (t *task) fromChild(err error) (Command, bool) {
	var pc *ParentCommandError
	if !errors.As(err, &pc) || pc.Namespace != t.childNamespace() {
		return Command{}, false
	}
	cmd := pc.Command
	cmd.Parent = false
	return cmd, true
}

// call runs the node function once, turning a panic into an error.
//
// Parallel steps (Go) end with their node: their join is in the deferred
// call that recovers, after the recover, rather than deferred on its own
// (a second deferred call cost every node ~30 instructions). A panic of
// the join itself still wins over the node's, as when it was deferred
// after the recover: joinRecovering recovers it and takes its stack.
func (t *task) call() (out Output, err error) {
	defer func() {
		p := recover()
		var stack []byte
		if p != nil {
			stack = debug.Stack()
		}
		if t.in != nil && t.in.par != nil {
			if jp, js := t.joinRecovering(); jp != nil {
				p, stack = jp, js
			}
		}
		if p != nil {
			err = &PanicError{Value: p, Stack: stack}
		}
	}()
	ctx := context.Context(t)
	if d := t.node.timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return t.node.run(ctx, t.r.state, t.payload)
}

// joinRecovering is joinSteps, returning what it panicked with, if it
// did, and the stack it panicked on.
func (t *task) joinRecovering() (p any, stack []byte) {
	defer func() {
		if p = recover(); p != nil {
			stack = debug.Stack()
		}
	}()
	t.joinSteps()
	return nil, nil
}

// route evaluates the node's conditional and fan-out edges against view.
func (t *task) route(view State) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	for _, c := range t.node.conds {
		key, err := c.route(t, view)
		if err != nil {
			return fmt.Errorf("its conditional edge failed: %w", err)
		}
		dst, ok := c.paths[key]
		if !ok {
			return fmt.Errorf("its conditional edge returned %q, which is not in the path map %q", key, c.keys)
		}
		if dst == endIdx {
			t.routes = append(t.routes, To(END))
		} else {
			t.routes = append(t.routes, To(t.r.g.nodes[dst].name))
		}
	}
	for _, f := range t.node.fans {
		targets, err := f.fan(t, view)
		if err != nil {
			return fmt.Errorf("its fan-out edge failed: %w", err)
		}
		for _, tg := range targets {
			if _, ok := f.dests[tg.node]; !ok {
				return fmt.Errorf("its fan-out edge targets %q, which the edge does not declare (declared: %v)", tg.node, sortedKeys(f.dests))
			}
		}
		t.routes = append(t.routes, targets...)
	}
	return nil
}

// checkWrites rejects writes to keys outside the schema.
func (r *run) checkWrites(t *task) error {
	for _, w := range t.writes {
		if w.key == nil {
			return fmt.Errorf("it returned a zero graph.Write; build writes with Key.Set, Append, Remove or Overwrite")
		}
		if _, ok := r.g.sch.slotOf(w.key.id); !ok {
			return fmt.Errorf("it wrote key %q, which is not in the graph's schema; list it in graph.New", w.key.name)
		}
	}
	return nil
}

// oneGoodWrite reports whether t wrote one write to a key the schema's
// dense index holds, which checkWrites accepts. False sends the writes to
// checkWrites, which also knows a schema without a dense index.
func (r *run) oneGoodWrite(t *task) bool {
	if len(t.writes) != 1 || t.writes[0].key == nil {
		return false
	}
	s := r.g.sch
	d := uint64(t.writes[0].key.id - s.lo)
	return d < uint64(len(s.dense)) && s.dense[d] > 0
}

// applyOwn applies a task's writes to view (a private clone), so its routers
// see the snapshot plus their own node's writes.
func (r *run) applyOwn(view State, t *task) error {
	for _, w := range t.writes {
		i, _ := r.g.sch.slotOf(w.key.id)
		sl := &view.vals[i]
		v, err := w.key.self.apply(sl.v, sl.set, []Write{w})
		if err != nil {
			return err
		}
		sl.v, sl.set = v, true
	}
	return nil
}

func (r *run) nodeErr(t *task, err error) error {
	return &NodeError{Node: t.node.name, TaskID: t.ID(), Namespace: r.ns, Step: r.step, Err: err}
}

// fnv128 is FNV-1a over two 64-bit lanes with different offsets: a cheap,
// allocation-free, process-independent hash for task IDs.
type fnv128 struct{ a, b uint64 }

func newFNV128() fnv128 { return fnv128{a: 14695981039346656037, b: 0x6c62272e07bb0142} }

func (h *fnv128) add(s string) { mix(h, s) }

func mix[S string | []byte](h *fnv128, s S) {
	for i := 0; i < len(s); i++ {
		h.a = (h.a ^ uint64(s[i])) * 1099511628211
		h.b = (h.b ^ uint64(s[i])) * 0x100000001b3
		h.b ^= h.b >> 29
	}
	h.a = (h.a ^ 0xff) * 1099511628211 // separator
	h.b = (h.b ^ 0xfe) * 0x100000001b3
}

// mixWords is mix taking eight bytes at a time, each folded back so its
// high bits reach the low ones: the checkpoint ID (36 bytes) is most of
// what a task's ID hashes, and byte by byte it cost about a tenth of a
// step saved with the in-memory saver. The IDs it gives differ from mix's;
// a task ID is only ever derived again from the same inputs by the same
// code (a restored task keeps the ID stored with it, see parseTaskID).
func mixWords(h *fnv128, s string) {
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h.a = (h.a ^ w) * 1099511628211
		h.a ^= h.a >> 32
		h.b = (h.b ^ w) * 0x100000001b3
		h.b ^= h.b >> 29
		s = s[8:]
	}
	mix(h, s)
}

// addInt mixes n's decimal digits, as strconv.AppendInt writes them.
// A task ID hashes its step: a step below a billion has its digits
// written here, without AppendInt's general path (TestAddIntDigits).
func (h *fnv128) addInt(n int) {
	if uint(n) < 1e9 {
		var buf [9]byte
		i, u := len(buf), uint32(n)
		for {
			i--
			buf[i] = byte('0' + u%10)
			if u /= 10; u == 0 {
				break
			}
		}
		mix(h, buf[i:])
		return
	}
	var buf [20]byte
	mix(h, strconv.AppendInt(buf[:0], int64(n), 10))
}

// parseTaskID turns a task ID back into its hash, so a task restored from
// a checkpoint keeps the ID it was saved with.
func parseTaskID(s string) (fnv128, bool) {
	if len(s) != 32 {
		return fnv128{}, false
	}
	var h fnv128
	for i := range 32 {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return fnv128{}, false
		}
		if i < 16 {
			h.a = h.a<<4 | d
		} else {
			h.b = h.b<<4 | d
		}
	}
	return h, true
}

func (h fnv128) hex() string {
	var cv carver
	s := h.carveHex(&cv)
	cv.release()
	return s
}

// carveHex is hex carving from cv's chunk.
func (h fnv128) carveHex(cv *carver) string {
	var buf [32]byte
	putHex(buf[:16], h.a)
	putHex(buf[16:], h.b)
	return cv.string(buf[:]) // saved with every checkpoint's next tasks
}
