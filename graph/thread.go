package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Snapshot is a thread's state at one checkpoint, as GetState and History
// return it.
type Snapshot struct {
	// Values is the state.
	Values State
	// Next names the nodes of the tasks that still have to run when the
	// thread resumes (tasks that finished before an interrupt or failure
	// are in Tasks, not here).
	Next []string
	// Tasks describes those tasks: finished ones (their writes are saved
	// and will not run again), interrupted ones and failed ones.
	Tasks []TaskState
	// Interrupts lists the interrupts waiting for an answer.
	Interrupts []InterruptInfo
	// Checkpoint, Parent and Metadata place the snapshot in the thread's
	// history.
	Checkpoint checkpoint.Ref
	Parent     checkpoint.Ref
	Metadata   checkpoint.Metadata
	Created    time.Time
	// Subgraphs holds, when WithSubgraphStates was given, the snapshots of
	// subgraph nodes (added with AddSubgraph) that stopped inside, keyed by
	// namespace.
	Subgraphs map[string]*Snapshot
}

// TaskState is one pending task of a Snapshot.
type TaskState struct {
	ID       string
	Node     string
	Finished bool // its writes are saved; it will not run again
	// Namespace is where a subgraph node's run checkpoints (read it with
	// WithNamespace); "" for other nodes.
	Namespace string
	// Writes is what a finished task wrote; it is applied when the step
	// commits.
	Writes Update
	// Error is the error text of an attempt that failed; the task runs
	// again on resume.
	Error      string
	Interrupts []InterruptInfo // waiting for answers
	// Steps names the durable steps (see Durable) an unfinished task has
	// saved, in call order: the work its re-run will not repeat.
	Steps []string
}

// WithSubgraphStates makes GetState include the states of subgraphs that
// stopped inside (see Snapshot.Subgraphs).
func WithSubgraphStates() RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().subgraphStates = true })
}

// GetState returns the thread's state at its latest checkpoint, or at the
// one WithCheckpointID names. The thread and saver come from the options
// (or the graph's defaults), as for Invoke. A thread without checkpoints is
// an error wrapping checkpoint.ErrNotFound.
func (g *Graph) GetState(ctx context.Context, opts ...RunOption) (*Snapshot, error) {
	r, err := g.stateRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer r.cancel(nil)
	tup, err := r.load()
	if err != nil {
		return nil, err
	}
	if tup == nil {
		return nil, fmt.Errorf("graph: thread %q: %w", r.cfg.thread, checkpoint.ErrNotFound)
	}
	return r.snapshot(ctx, tup)
}

// History returns the thread's snapshots, newest first, filtered and
// bounded by lo (metadata filter, before, limit).
func (g *Graph) History(ctx context.Context, lo checkpoint.ListOptions, opts ...RunOption) iter.Seq2[*Snapshot, error] {
	return func(yield func(*Snapshot, error) bool) {
		base, err := g.stateRun(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		defer base.cancel(nil)
		ref := checkpoint.Ref{ThreadID: base.cfg.thread, Namespace: base.ns}
		for tup, err := range base.cfg.saver.List(ctx, ref, lo) {
			if err != nil {
				yield(nil, err)
				return
			}
			r, err := g.stateRun(ctx, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			s, err := r.snapshot(ctx, tup)
			r.cancel(nil)
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// UpdateState changes a thread's state from outside a run, as if node
// asNode had returned update, and saves the result as a new checkpoint that
// decides what runs next:
//
//   - asNode names a node: its edges choose the next tasks (conditional
//     edges are evaluated); the tasks that were pending, with their
//     interrupts, answers and finished writes, are dropped. This is how a
//     person's edit stands in for a node's work.
//   - asNode == START: update is applied like an input and START's edges
//     run next; pending work is dropped.
//   - asNode == "": the values change and nothing else does: the pending
//     tasks stay next, with every interrupt still waiting, every answer
//     already given, every finished task's writes and every breakpoint
//     passed.
//   - asNode == END: the update ends the run: nothing runs next and
//     whatever waited is dropped.
//
// With WithCommand among opts, the command's Update is applied with update,
// and its Goto targets (if any) are what runs next, replacing asNode's
// edges (asNode may then also be "" or START). Based on the latest checkpoint the
// new one has source "update"; based on an older one (WithCheckpointID) it
// has source "fork" and starts a new branch, leaving the old one untouched.
// It returns the new checkpoint's reference.
func (g *Graph) UpdateState(ctx context.Context, update Update, asNode string, opts ...RunOption) (checkpoint.Ref, error) {
	r, err := g.stateRun(ctx, opts)
	if err != nil {
		return checkpoint.Ref{}, err
	}
	defer r.cancel(nil)
	r.cfg.durability = DurabilitySync // an update is written at once
	tup, err := r.load()
	if err != nil {
		return checkpoint.Ref{}, err
	}
	if tup != nil {
		if _, err := r.restoreFrom(tup, false); err != nil {
			return checkpoint.Ref{}, err
		}
		r.step++
	}
	if asNode != "" && r.x != nil {
		r.x.pending = nil // an input not applied yet is dropped with the pending work
	}
	r.source = checkpoint.SourceUpdate
	if r.cpID != r.headID {
		r.source = checkpoint.SourceFork
	}
	cmd := r.cfg.get().command
	if cmd != nil {
		c := *cmd
		if c.Goto, err = r.decodeTargets(c.Goto); err != nil {
			return checkpoint.Ref{}, err
		}
		cmd = &c
		if err := r.checkGoto(cmd.Goto); err != nil {
			return checkpoint.Ref{}, err
		}
		update = append(slices.Clone(update), cmd.Update...)
		if asNode == END && len(cmd.Goto) > 0 {
			return checkpoint.Ref{}, errors.New("graph: UpdateState as END ends the thread's run; it cannot also go to nodes")
		}
	}
	switch {
	case asNode == END:
		// The update ends the run: nothing is left to run and what waited
		// (interrupts, joins, deferred nodes) is dropped.
		t := &task{r: r, node: r.g.start, writes: update, step: r.step, done: true, viaGoto: true}
		if err = r.checkWrites(t); err == nil {
			r.deferred = r.deferred[:0]
			for _, seen := range r.b.seen {
				clear(seen)
			}
			err = r.commit([]*task{t})
		}
	case cmd != nil && len(cmd.Goto) > 0:
		err = r.updateGoto(asNode, update, cmd.Goto)
	case asNode == START:
		err = r.applyInput(update, false)
	case asNode == "":
		t := &task{r: r, node: r.g.start, writes: update, step: r.step, done: true}
		if err = r.checkWrites(t); err == nil {
			r.keepNext = true // values change; what runs next does not
			err = r.commit([]*task{t})
		}
		if err == nil && tup != nil {
			// The pending work goes on unchanged: interrupts still wait,
			// answers already given and finished tasks' writes are kept,
			// breakpoints passed stay passed.
			err = r.carryWrites(tup)
		}
	default:
		err = r.updateAs(asNode, update)
	}
	if err != nil {
		return checkpoint.Ref{}, err
	}
	return checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}, nil
}

// updateGoto applies update as if node (START for "") had returned a
// Command going to targets: they are what runs next.
func (r *run) updateGoto(node string, update Update, targets []Target) error {
	n := r.g.start
	if node != "" && node != START {
		i, ok := r.g.byName[node]
		if !ok {
			return fmt.Errorf("graph: UpdateState as node %q: no such node%s", node, suggest(node, r.g.byName))
		}
		n = r.g.nodes[i]
	}
	t := &task{Context: r.ctx, r: r, node: n, writes: update, routes: targets, viaGoto: true, step: r.step, done: true}
	if err := r.checkWrites(t); err != nil {
		return fmt.Errorf("graph: UpdateState: %w", err)
	}
	return r.commit([]*task{t})
}

// updateAs applies update as if node had returned it and plans from its
// edges.
func (r *run) updateAs(node string, update Update) error {
	i, ok := r.g.byName[node]
	if !ok {
		return fmt.Errorf("graph: UpdateState as node %q: no such node%s", node, suggest(node, r.g.byName))
	}
	t := &task{Context: r.ctx, r: r, node: r.g.nodes[i], writes: update, step: r.step}
	if err := r.checkWrites(t); err != nil {
		return fmt.Errorf("graph: UpdateState as node %q: %w", node, err)
	}
	if len(t.node.conds)+len(t.node.fans) > 0 {
		view := r.state.clone()
		if err := r.applyOwn(view, t); err != nil {
			return err
		}
		if err := t.route(view); err != nil {
			return fmt.Errorf("graph: UpdateState as node %q: %w", node, err)
		}
	}
	t.done = true // it did not run: keep it out of the path
	return r.commit([]*task{t})
}

// stateRun prepares a run that reads or edits a thread without executing.
// With WithNamespace it is a run of the subgraph that namespace belongs to.
func (g *Graph) stateRun(ctx context.Context, opts []RunOption) (*run, error) {
	r, err := g.newRun(ctx, nil, opts, false)
	if err != nil {
		return nil, err
	}
	if r.cfg.saver == nil {
		r.cancel(nil)
		return nil, errors.New("graph: reading or updating a thread needs WithCheckpointer and WithThread")
	}
	ns := r.cfg.get().namespace
	if ns == "" || r.parent != nil {
		return r, nil
	}
	r.cancel(nil)
	sub, err := g.subgraphAt(ns)
	if err != nil {
		return nil, err
	}
	if r, err = sub.newRun(ctx, nil, opts, false); err != nil {
		return nil, err
	}
	r.ns = ns
	return r, nil
}

// subgraphAt finds the subgraph whose runs checkpoint in namespace ns
// ("node:taskID|node:taskID", or a Stateful node's bare name).
func (g *Graph) subgraphAt(ns string) (*Graph, error) {
	cur := g
	for _, seg := range strings.Split(ns, "|") {
		name, _, _ := strings.Cut(seg, ":")
		i, ok := cur.byName[name]
		if !ok {
			return nil, fmt.Errorf("graph: namespace %q: no node %q%s", ns, name, suggest(name, cur.byName))
		}
		if cur.nodes[i].sub == nil {
			return nil, fmt.Errorf("graph: namespace %q: node %q is not a subgraph node (AddSubgraph); for a graph a node invokes, call GetState on that graph with WithNamespace", ns, name)
		}
		cur = cur.nodes[i].sub
	}
	return cur, nil
}

// WithNamespace makes GetState, History and UpdateState read or edit the
// checkpoints of one subgraph invocation instead of the root graph's: ns is
// a namespace as events (Event.Namespace), interrupts and Snapshot tasks
// (TaskState.Namespace) show it, such as "writer:9f…" or
// "writer:9f…|review:41…". The states of subgraphs added with AddSubgraph
// are read with their own schema, also after the parent has finished.
func WithNamespace(ns string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().namespace = ns })
}

// snapshot describes a checkpoint.
func (r *run) snapshot(ctx context.Context, tup *checkpoint.Tuple) (*Snapshot, error) {
	if _, err := r.restoreFrom(tup, true); err != nil {
		return nil, err
	}
	s := &Snapshot{
		Values:     r.state,
		Checkpoint: tup.Ref,
		Metadata:   tup.Metadata,
		Created:    tup.Checkpoint.Created,
	}
	if tup.Metadata.Parent != "" {
		s.Parent = checkpoint.Ref{ThreadID: tup.Ref.ThreadID, Namespace: tup.Ref.Namespace, ID: tup.Metadata.Parent}
	}
	if r.x != nil {
		for _, m := range r.x.after {
			if !m.passed {
				s.Interrupts = append(s.Interrupts, m.info)
			}
		}
	}
	if r.x != nil && r.x.pending != nil {
		// A pre-input checkpoint: START is next, with the input.
		s.Next = append(s.Next, START)
		s.Tasks = append(s.Tasks, TaskState{ID: r.x.pending.id, Node: START})
	}
	for _, t := range r.next {
		if !t.done {
			s.Next = append(s.Next, t.node.name)
		}
		ts := TaskState{ID: t.ID(), Node: t.node.name, Finished: t.done}
		if t.node.sub != nil {
			ts.Namespace = t.childNamespace()
		}
		if t.done {
			ts.Writes = t.writes
		} else if t.in != nil {
			ts.Error = t.in.lastErr
			for _, st := range t.in.steps {
				ts.Steps = append(ts.Steps, st.Name)
			}
		}
		for _, wi := range t.in.priorList() {
			if !t.answered(wi.ID) {
				ts.Interrupts = append(ts.Interrupts, wi.InterruptInfo)
			}
		}
		s.Interrupts = append(s.Interrupts, ts.Interrupts...)
		s.Tasks = append(s.Tasks, ts)
		if r.cfg.get().subgraphStates && t.node.sub != nil && len(t.in.priorList()) > 0 {
			if err := r.subSnapshot(ctx, s, t); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// subSnapshot adds the state of a subgraph node that stopped inside.
func (r *run) subSnapshot(ctx context.Context, s *Snapshot, t *task) error {
	ctx = context.WithValue(ctx, taskKey{}, t) // nests the run under t
	t.Context = ctx
	sub, err := t.node.sub.stateRun(ctx, []RunOption{WithCheckpointer(r.cfg.saver), WithThread(r.cfg.thread), WithSubgraphStates()})
	if err != nil {
		return err
	}
	defer sub.cancel(nil)
	tup, err := sub.load()
	if err != nil || tup == nil {
		return err
	}
	ss, err := sub.snapshot(ctx, tup)
	if err != nil {
		return err
	}
	if s.Subgraphs == nil {
		s.Subgraphs = map[string]*Snapshot{}
	}
	s.Subgraphs[sub.ns] = ss
	return nil
}

// carryWrites copies the pending writes of the checkpoint tup to the run's
// new checkpoint, which has the same next tasks.
func (r *run) carryWrites(tup *checkpoint.Tuple) error {
	byTask := map[string][]checkpoint.PendingWrite{}
	var order []string
	for _, w := range tup.Writes {
		if _, ok := byTask[w.TaskID]; !ok {
			order = append(order, w.TaskID)
		}
		byTask[w.TaskID] = append(byTask[w.TaskID], w)
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}
	for _, id := range order {
		ws := byTask[id]
		do := func() error {
			if err := r.cfg.saver.PutWrites(r.ctx, ref, id, ws); err != nil {
				return fmt.Errorf("graph: carry the pending writes of task %s to checkpoint %s: %w", id, ref.ID, err)
			}
			return nil
		}
		if r.w != nil {
			r.w.submit(do) // after the checkpoint's own Put, in order
			continue
		}
		if err := do(); err != nil {
			return err
		}
	}
	return nil
}
