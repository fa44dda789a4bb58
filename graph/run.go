package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Result is what Invoke returns.
type Result struct {
	// State is the final state.
	State State
	// Status is how the run ended.
	Status Status
	// Steps is the number of supersteps this run executed.
	Steps int
	// Path lists every task the run executed, in step and task order.
	Path []NodeRun
	// Checkpoint is the last checkpoint saved (zero without a checkpointer).
	Checkpoint checkpoint.Ref
	// Interrupts lists what the run is waiting for when Status is
	// StatusInterrupted.
	Interrupts []InterruptInfo
	// NodeUsage is what this run's model calls cost, per node (nil when
	// no model was called); Usage() sums it. A node's usage includes its
	// subgraphs' and the graphs it invoked. It covers this Invoke only: a
	// resumed thread's earlier runs are not included. EventTaskEnd carries
	// each task's usage.
	NodeUsage map[string]Usage
}

// NodeRun is one task execution in Result.Path.
type NodeRun struct {
	// Step is the step the task ran in (absolute: it continues across a
	// thread's runs).
	Step int
	// Node is the node the task ran.
	Node string
	// Attempts counts the node's executions under its retry policy (1
	// when it succeeded the first time).
	Attempts int
	// Duration is the task's time, its retries and their waits included.
	// In a run with no checkpointer, events, Observer or Control, a task
	// that follows a one-task step starts when that step's task ended, so
	// its duration also holds the engine's commit of that step (under a
	// microsecond with the built-in reducers; a slow custom reducer shows
	// here). EventTaskEnd and an Observer see durations measured apart.
	Duration time.Duration
	// id is the task ID's hash when full, or else the hash of its
	// prefix (thread, checkpoint, namespace), which TaskID finishes with
	// the step and the node: most callers never read an ID, so the run
	// hashes each step's prefix once instead of every task's ID.
	id   fnv128
	full bool
}

// TaskID returns the task's deterministic ID, as events and checkpoints
// show it. (It is computed on demand: most callers never read it.)
func (n NodeRun) TaskID() string {
	if n.full {
		return n.id.hex()
	}
	h := n.id
	finishID(&h, n.Step, false, 0, n.Node)
	return h.hex()
}

// Invoke runs the graph to the end and returns the final state. input is
// applied as step 0 through the keys' reducers; nil starts from an empty
// state (or, with a checkpointer, resumes the thread). Invoked from inside a
// node, the run is a nested subgraph: its events go to the parent's stream
// and its namespace and task IDs carry the parent task's.
func (g *Graph) Invoke(ctx context.Context, input Update, opts ...RunOption) (*Result, error) {
	r, err := g.newRun(ctx, input, opts, false)
	if err != nil {
		return nil, err
	}
	return r.execute(input)
}

// Stream runs the graph and yields its events as they happen, then a final
// (zero Event, error) pair if the run fails. Breaking out of the loop cancels
// the run; Stream returns only after every task of the run has stopped, so
// no goroutine outlives it.
func (g *Graph) Stream(ctx context.Context, input Update, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		r, err := g.newRun(ctx, input, opts, true)
		if err != nil {
			yield(Event{}, err)
			return
		}
		r.sink = func(ev Event) bool { return yield(ev, nil) }
		// An interrupt is not a failure: its EventInterrupt says it all.
		if _, err := r.execute(input); err != nil && !r.stopped && !errors.Is(err, ErrInterrupted) {
			yield(Event{}, err)
		}
	}
}

type run struct {
	g      *Graph
	cfg    runConfig
	ctx    context.Context
	cancel context.CancelCauseFunc
	ns     string
	parent *task

	state    State
	step     int // absolute step number (continues across a thread's runs)
	stepsRun int // steps executed by this run
	// tasks and states carved from slabs so far (see runMemo)
	tasksMade, statesMade int32
	limit                 int
	next                  []*task
	spare                 []*task // the previous step's task slice, reused by plan
	taskSlab              []task  // fresh tasks not yet handed out (see newTask)
	valSlab               []slot  // fresh state slots not yet handed out (see newVals)
	deferred              []int
	b                     *runBufs // working buffers, from the graph's pool (see runBufs)
	path                  []NodeRun
	usage                 atomic.Pointer[usageLedger] // allocated by the first RecordUsage

	kinds EventKind
	sink  func(Event) bool
	evch  chan Event
	// lastEnd is the clock (monotonic) when the last step's one task
	// ended, if the next step's task may start then: nothing between
	// them can wait (see runTasks); 0: the next task reads the clock
	lastEnd time.Duration
	// flags, kept together so the struct packs (run stays within its
	// allocation size class: see bench/README.md)
	stopped     bool
	keepNext    bool // UpdateState without a node: commit leaves r.next alone
	dirty       bool // DurabilityExit: something is not saved yet
	uncommitted bool // the step in progress has not committed (see save)
	ownCP       bool // cpID was drawn by this run's save (see task.freshChild)
	freshNS     bool // a nested run whose namespace is known empty: restore reads nothing
	forwards    bool // a nested Invoke: events go to the parent task's stream

	// checkpointing
	cpID     string
	headID   string // the namespace's latest checkpoint, as this run knows it
	nextTag  uint64 // 1<<32 | the tag of the next checkpoint's versions, 0 until drawn (see tag)
	source   checkpoint.Source
	w        *writer  // DurabilityAsync's background writer
	savedVer []uint64 // per key: the version in the last checkpoint saved
	chain    []chainInfo
	stepLog  [][]Write // per key: writes applied this step (with a saver)
	// subgraph bookkeeping: writes to shared keys, in order
	shared map[int]bool
	log    Update
	logVer uint64 // version of the saved log (logKey)
	logAt  int    // entries of log already saved

	x *runExtra // what few runs need; see extra
}

// runExtra holds run state that few runs need, kept out of the run struct
// so every Invoke stays in its allocation size class.
type runExtra struct {
	after       []afterMark // breakpoints after the step of the restored checkpoint
	raisedAfter []afterMark // breakpoints after a step this run committed
	// DurabilityExit bookkeeping: steps committed so far, and the pending
	// writes held for the checkpoint the run started from until finish.
	commits    int
	source     checkpoint.Source
	adopt      *checkpoint.Tuple                    // another run's head with pending work (see adopt)
	command    *task                                // a command's pending update and routes, restored
	commandIDs []string                             // the IDs of its targets' tasks
	orphans    map[string][]checkpoint.PendingWrite // pending writes of the tasks it adds
	// the run context (see WithRunContext): its JSON, saved version, and
	// whether it changed since the last checkpoint
	ctxJSON  json.RawMessage
	ctxVer   uint64
	ctxDirty bool
	// a Stateful subgraph's invocation: the parent's values of shared
	// keys, applied on top of the remembered state, and whether the log of
	// writes to shared keys starts over at the next checkpoint
	invocation Update
	logRestart bool
	// a root run that travels back in time (see branchBound), and whether
	// this Stateful subgraph run restored its namespace by that bound
	branch   *branchBound
	branched bool
	// the pre-input checkpoint: the input it carries (restored, or being
	// saved), and under DurabilityExit the checkpoint held until finish
	pending   *pendingInput
	holdCP    bool
	heldCP    *heldCheckpoint
	pairCP    bool       // heldCP waits for the next checkpoint (putPair)
	heldMu    sync.Mutex // parallel tasks hold writes at once
	held      []heldWrites
	finishing bool
}

// heldWrites are pending writes DurabilityExit holds until the run ends.
type heldWrites struct {
	cp, task, node string
	ws             []checkpoint.PendingWrite
}

// extra returns the run's rare state, allocating it.
func (r *run) extra() *runExtra {
	if r.x == nil {
		r.x = &runExtra{}
	}
	return r.x
}

func (r *run) finishing() bool { return r.x != nil && r.x.finishing }

var errStopped = errors.New("graph: the stream's consumer stopped reading")

func (g *Graph) newRun(ctx context.Context, input Update, opts []RunOption, streaming bool) (*run, error) {
	r := &run{g: g, limit: DefaultStepLimit}
	if pt := taskFrom(ctx); pt != nil {
		r.cfg.inherit(pt)
	}
	for _, o := range g.defaults {
		o.applyRun(&r.cfg)
	}
	for _, o := range opts {
		o.applyRun(&r.cfg)
	}
	if r.cfg.stepLimit != 0 {
		if r.cfg.stepLimit < 0 {
			return nil, fmt.Errorf("graph: step limit %d is invalid; give WithStepLimit a positive number", r.cfg.stepLimit)
		}
		r.limit = r.cfg.stepLimit
	}
	if (r.cfg.saver == nil) != (r.cfg.thread == "") && taskFrom(ctx) == nil {
		return nil, errors.New("graph: a checkpointer and a thread go together: pass both WithCheckpointer(saver) and WithThread(id)")
	}
	if streaming {
		r.kinds = DefaultEvents
	}
	if r.cfg.eventsSet {
		r.kinds = r.cfg.events
	}
	if pt := taskFrom(ctx); pt != nil {
		// The namespace derives from the parent task's ID, which derives
		// from a checkpoint the parent may still hold (see flushInput).
		if err := pt.r.flushInput(); err != nil {
			return nil, err
		}
		r.parent = pt
		r.ns = pt.childNamespace()
		// The first run in the parent's thread takes the task's fresh
		// namespace, if it inherits the parent's saver; runs in other
		// threads neither write there nor take it (and may be concurrent).
		r.freshNS = r.cfg.saver != nil && r.cfg.thread == pt.r.cfg.thread && pt.freshChild() && !r.cfg.saverSet
		if !streaming {
			// A nested Invoke forwards its events to the parent's stream
			// (see deliver).
			r.kinds, r.forwards = pt.r.nestedKinds(), true
		}
	}
	if r.cfg.runID == "" && r.cfg.saver != nil {
		r.cfg.runID = checkpoint.NewID()
	}
	switch {
	case r.cfg.timeout > 0:
		ctx, cancelT := context.WithTimeout(ctx, r.cfg.timeout)
		var cancel context.CancelCauseFunc
		r.ctx, cancel = context.WithCancelCause(ctx)
		r.cancel = func(cause error) { cancel(cause); cancelT() }
	case streaming || r.cfg.control != nil:
		r.ctx, r.cancel = context.WithCancelCause(ctx)
	default:
		// Nothing inside an Invoke cancels the run as a whole (a failing
		// task cancels only its step), so the caller's context serves.
		r.ctx, r.cancel = ctx, func(error) {}
	}
	r.path = make([]NodeRun, 0, r.pathCap())
	r.state = State{sch: g.sch}
	r.state.vals = r.newVals(len(g.sch.keys)) // fresh slots are zero
	if r.cfg.saver != nil {
		r.chain = make([]chainInfo, len(g.sch.keys))
		r.stepLog = make([][]Write, len(g.sch.keys))
		r.savedVer = make([]uint64, len(g.sch.keys))
	}
	r.b = g.memo.buffers(g, r)
	r.b.thr, r.b.thrOf, r.b.thrOK = threadHash(r.cfg.thread), r.cfg.thread, true
	return r, nil
}

// pathCap is the capacity of a run's path: what the graph's last run
// recorded, or else a task per node, within the step limit.
func (r *run) pathCap() int {
	n := min(r.limit, len(r.g.nodes), 128)
	if h := int(r.g.memo.path.Load()); h > n {
		n = min(h, 1024)
	}
	return n
}

// runCounts returns, per node, how many times it ran in this run.
func (r *run) runCounts() []int { return r.b.marks[len(r.g.nodes):] }

func (r *run) wants(k EventKind) bool { return r.kinds&k != 0 }

func (r *run) deliver(ev Event) {
	if r.stopped {
		return
	}
	var ok bool
	switch {
	case r.sink != nil:
		ok = r.sink(ev)
	case r.forwards:
		// A nested Invoke's events (no closure per nested run).
		r.parent.forward(ev)
		ok = r.parent.r.ctx.Err() == nil
	default:
		return
	}
	if !ok {
		r.stopped = true
		r.cancel(errStopped)
	}
}

// runInterrupt returns err's InterruptError when the run as a whole is
// interrupted, or nil. (Its own function, so that the error target is
// allocated only for a run that ends with an error.)
func runInterrupt(err error) *InterruptError {
	var ie *InterruptError
	if errors.As(err, &ie) && ie.run {
		return ie
	}
	return nil
}

// execute runs the loop and settles the status.
func (r *run) execute(input Update) (*Result, error) {
	defer r.cancel(nil)
	if r.cfg.saver != nil && r.cfg.durability == DurabilityAsync {
		r.w = newWriter() // drained and stopped by finish
	}
	if r.cfg.saver != nil && r.cfg.durability == DurabilityExit {
		r.extra() // before parallel tasks hold writes in it
	}
	ctl := r.cfg.control
	if ctl != nil {
		if err := ctl.attach(r.cancel); err != nil {
			return nil, err
		}
	}
	err := r.loop(input)
	r.remember()
	defer r.putBuffers() // after finish, which still plans
	if ferr := r.finish(err); ferr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
		err = ferr
	}
	status := StatusCompleted
	var interrupts []InterruptInfo
	switch {
	case err == nil:
	case runInterrupt(err) != nil:
		status, interrupts = StatusInterrupted, runInterrupt(err).Interrupts
	case errors.Is(err, ErrAborted) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errStopped):
		status = StatusCancelled
	default:
		status = StatusFailed
	}
	if ctl != nil {
		ctl.detach(status)
	}
	res := &Result{State: r.state, Status: status, Steps: r.stepsRun, Path: r.path, Interrupts: interrupts}
	res.NodeUsage = r.nodeUsage()
	if r.cpID != "" {
		res.Checkpoint = checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

func (r *run) loop(input Update) error {
	resumed, err := r.restore()
	if err != nil {
		return err
	}
	if r.parent != nil && resumed {
		input = nil // a nested run found in its namespace goes on where it stopped
		if r.parent.node.stateful && r.x != nil && r.x.invocation != nil && (r.x.branched || !(r.parent.restored && len(r.next) > 0)) {
			// A Stateful subgraph's new invocation: what was pending in
			// its namespace belongs to an invocation that was given up
			// (or, on a branch back in time, to the state it had then).
			r.next, r.deferred = nil, r.deferred[:0]
			for _, seen := range r.b.seen {
				clear(seen)
			}
			r.x.logRestart = true
			input = r.x.invocation
		}
	}
	if resumed && input == nil && r.parent == nil && r.cpID != r.headID && len(r.next) > 0 {
		if err := r.fork(); err != nil {
			return err
		}
	}
	if resumed && input == nil && r.x != nil && r.x.adopt != nil && r.cpID == r.headID {
		// Before any answer or result is written, so all of them are ours.
		if err := r.adopt(r.x.adopt); err != nil {
			return err
		}
		r.x.adopt = nil
	}
	reuse := false // the run goes on from a pre-input checkpoint at the head
	if resumed && input == nil && r.x != nil && r.x.pending != nil && r.cfg.get().command == nil {
		// A pre-input checkpoint whose input was not applied (a crash, or
		// a replay from it): apply it now.
		input, reuse = r.x.pending.input, r.cpID == r.headID
	}
	if r.x != nil {
		r.x.pending = nil
	}
	if err := r.setRunContext(); err != nil {
		return err
	}
	if err := r.resume(resumed, input); err != nil {
		return err
	}
	if cmd := r.cfg.get().command; cmd != nil || input == nil && r.x != nil && r.x.command != nil {
		if cmd != nil && input != nil {
			return errors.New("graph: a command is the run's input; give Invoke a nil input with WithCommand")
		}
		if err := r.command(cmd, resumed); err != nil {
			return err
		}
		resumed = true // the command's step stands in for the input
		input = nil
	}
	if input != nil || !resumed {
		pre := !reuse && r.preInput(input)
		switch {
		case pre && !resumed:
			r.step = -1 // a new thread's pre-input checkpoint, as LangGraph's
		case resumed:
			r.step++ // the input gets a step of its own in the thread's history
		}
		r.source = checkpoint.SourceInput
		if pre || reuse {
			r.source = checkpoint.SourceLoop // the input checkpoint came first
		}
		if !resumed && r.foldsInput() {
			r.holdInput() // written with the first step's (see nestedfold.go)
		}
		if err := r.applyInput(input, pre); err != nil {
			return err
		}
	}
	for len(r.next) > 0 {
		if ctl := r.cfg.control; ctl != nil {
			if err := ctl.boundary(r.ctx); err != nil {
				return r.cause(err)
			}
		}
		if err := r.ctx.Err(); err != nil {
			return r.cause(err)
		}
		if r.w != nil {
			if err := r.w.failed(); err != nil {
				return err
			}
		}
		if r.stepsRun >= r.limit {
			return r.stepLimitError()
		}
		if len(r.cfg.get().before) > 0 {
			if err := r.breakBefore(); err != nil {
				return err
			}
		}
		r.step++
		r.stepsRun++
		r.source = checkpoint.SourceLoop
		r.uncommitted = true
		if err := r.superstep(); err != nil {
			return r.cause(err)
		}
		if ctl := r.cfg.control; ctl != nil {
			ctl.committed(r.stepsRun)
		}
	}
	return nil
}

// cause prefers the reason the run's context was cancelled (abort, consumer
// gone, timeout) over the context error a task reported.
func (r *run) cause(err error) error {
	if c := context.Cause(r.ctx); c != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, c)) {
		if errors.Is(c, ErrAborted) || errors.Is(c, errStopped) {
			return c
		}
		if errors.Is(c, context.DeadlineExceeded) {
			return fmt.Errorf("graph: run timed out: %w", c)
		}
	}
	return err
}

// superstep runs r.next against the frozen state and commits the results.
func (r *run) superstep() error {
	tasks := r.next
	if r.wants(EventDebug) {
		names := make([]string, len(tasks))
		for i, t := range tasks {
			names[i] = t.node.name
		}
		r.deliver(Event{Kind: EventDebug, Step: r.step, Namespace: r.ns, Debug: fmt.Sprintf("planned %d tasks: %v", len(tasks), names)})
	}
	if err := r.runTasks(tasks); err != nil {
		return err
	}
	var waiting []InterruptInfo
	for _, t := range tasks {
		if t.in == nil && !t.waiting {
			continue // raised nothing and was not waiting: nothing to gather
		}
		waiting = append(waiting, t.in.raisedList()...)
		if t.waiting { // still unanswered: it did not run, its interrupts stand
			t.intr().raised = t.intr().raised[:0]
			for _, wi := range t.in.priorList() {
				t.intr().raised = append(t.intr().raised, wi.InterruptInfo)
			}
			waiting = append(waiting, t.in.raisedList()...)
		}
	}
	if len(waiting) > 0 {
		return r.interrupted(waiting)
	}
	if err := r.commit(tasks); err != nil {
		return err
	}
	if cap(r.spare) == 0 {
		r.spare = tasks[:0] // committed: the slice is free for the step after next
	}
	if len(r.cfg.get().after) > 0 && len(r.next) > 0 {
		if err := r.breakAfter(tasks); err != nil {
			return err
		}
	}
	release(tasks)
	return nil
}

// release drops what committed tasks refer to: their writes are in the
// state (and in the checkpoint, and were handed to the events), so a task
// slab, or a context a node kept, keeps no old values alive.
func release(tasks []*task) {
	for _, t := range tasks {
		t.writes, t.routes, t.payload = nil, nil, nil
	}
}

// commit applies the tasks' writes in task order, plans the next step,
// emits events and saves a checkpoint. A stable counting sort first groups
// the step's writes by key (task order kept within a key), so each key is
// unboxed, reduced and boxed once per step and gets its writes as one slice.
func (r *run) commit(tasks []*task) error {
	var err error
	if len(tasks) == 1 && len(tasks[0].writes) == 1 {
		err = r.applyOne(tasks[0]) // apply's own test, without its call
	} else {
		err = r.apply(tasks)
	}
	if err != nil {
		return err
	}
	return r.afterCommit(tasks)
}

// afterCommit plans the next step, records the path, sends events and saves
// a checkpoint.
func (r *run) afterCommit(tasks []*task) error {
	r.uncommitted = false
	if !r.keepNext && (len(tasks) != 1 || !r.planChain(tasks[0])) { // plan, without its call
		if err := r.planAll(tasks); err != nil {
			return err
		}
	}
	r.path = slices.Grow(r.path, len(tasks))
	var pre fnv128
	prefixed := false
	for _, t := range tasks {
		if t.node.idx >= 0 && !t.done {
			nr := NodeRun{Step: r.step, Node: t.node.name, Attempts: int(t.attempts), Duration: t.dur}
			if t.hashed || t.push || t.step != r.step {
				nr.id, nr.full = t.sum(), true
			} else {
				if !prefixed {
					if b := r.b; b != nil && b.hasPrefix(r.cpID) {
						pre = b.pre // stepPrefix, spelled out to save its call
					} else {
						pre = b.hashPrefix(r)
					}
					prefixed = true
				}
				nr.id = pre
			}
			r.path = append(r.path, nr)
		}
		t.settleUsage()
	}
	if r.wants(EventUpdates) {
		for _, t := range tasks {
			if t.node.idx >= 0 {
				r.deliver(Event{Kind: EventUpdates, Step: r.step, Node: t.node.name, TaskID: t.ID(), Namespace: r.ns, Update: t.writes})
			}
		}
	}
	if r.wants(EventValues) {
		r.deliver(Event{Kind: EventValues, Step: r.step, Namespace: r.ns, State: r.state})
	}
	if r.cfg.saver == nil {
		return nil
	}
	if r.cfg.durability == DurabilityExit {
		r.dirty = true
		r.extra().commits++
		r.x.source = r.source // what finish's checkpoint says it is
		return nil
	}
	return r.save(r.source)
}

// keyTally counts one key's writes in a step, for commit's counting sort.
type keyTally struct {
	count, start, next int32
	first              int32 // the task that wrote it first
}

// writers names the nodes whose writes touch key k, for errors.
func writers(tasks []*task, k keyImpl) string {
	var names []string
	for _, t := range tasks {
		for _, w := range t.writes {
			if w.key.self == k && !slices.Contains(names, t.node.name) {
				names = append(names, t.node.name)
			}
		}
	}
	return strings.Join(names, ", ")
}

func (r *run) conflict(key string, a, b *task) error {
	if a == b {
		return fmt.Errorf("graph: step %d: node %q wrote last-value key %q twice; write it once per step, or give the key a reducer", r.step, a.node.name, key)
	}
	return fmt.Errorf("graph: step %d: last-value key %q was written by both %q and %q; only one node may write it per step (their order would be arbitrary), or give the key a reducer such as graph.Concat", r.step, key, a.node.name, b.node.name)
}

func (r *run) stepLimitError() error {
	e := &StepLimitError{Limit: r.limit}
	for i, n := range r.runCounts() {
		if n > 1 {
			e.Repeating = append(e.Repeating, NodeCount{Node: r.g.nodes[i].name, Runs: n})
		}
	}
	slices.SortStableFunc(e.Repeating, func(a, b NodeCount) int { return b.Runs - a.Runs })
	for _, t := range r.next {
		e.Next = append(e.Next, t.node.name)
	}
	e.Namespace = r.ns
	return e
}

// tag is the low half of the versions this commit writes: a random number
// drawn once per checkpoint (0 without a checkpointer), so two branches of a
// thread never give one key the same version. It used to hash a checkpoint
// ID drawn for the purpose; nothing reads the ID back, and the runtime's
// generator draws the same 32 random bits without allocating.
func (r *run) tag() uint32 {
	if r.cfg.saver == nil {
		return 0
	}
	return r.drawTag()
}

// drawTag is tag with a checkpointer, kept apart so that tag inlines.
func (r *run) drawTag() uint32 {
	if r.nextTag == 0 {
		r.nextTag = 1<<32 | uint64(rand.Uint32())
	}
	return uint32(r.nextTag)
}

// idTag is the low half of the versions written for checkpoint id.
func idTag(id string) uint32 {
	h := newFNV128()
	h.add(id)
	return uint32(h.a)
}
