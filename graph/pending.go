package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
)

// A task's pending writes record what it left behind in the step after the
// run's latest checkpoint, so that a resumed run (after an interrupt, a
// failure or a crash) neither loses nor repeats it:
//
//   - a finished task: its state writes (encoded like deltas) and, under
//     checkpoint.WriteGoto, the targets it chose (always present: it marks
//     the task as finished);
//   - an interrupted task: its interrupts (WriteInterrupt) and the answers
//     given so far (WriteResume);
//   - a failed task: its error (WriteError), for the thread's state; it runs
//     again on resume;
//   - a task that did not finish (interrupted, failed, still running when
//     the process died): the results of its durable steps (WriteStep, see
//     Durable), returned from the save when it runs again.

// taskWrites encodes a task's pending writes.
func (r *run) taskWrites(t *task) ([]checkpoint.PendingWrite, error) {
	out := make([]checkpoint.PendingWrite, 0, len(t.writes)+1) // a finished task's: its writes and routes
	id := t.ID()
	add := func(key string, v any) error {
		b, ok := v.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(v); err != nil {
				return err
			}
		}
		out = append(out, checkpoint.PendingWrite{TaskID: id, Index: len(out), Key: key, Value: b})
		return nil
	}
	if t.passed {
		if err := add(checkpoint.WriteInterrupt, r.breakpoint(t, InterruptBefore)); err != nil {
			return nil, err
		}
	}
	switch {
	case len(t.in.raisedList()) > 0:
		for _, in := range t.in.raisedList() {
			if in.Kind == InterruptBefore && in.ID == id+":before" {
				continue // the marker above records it
			}
			call := -1
			if n, ok := ownCall(id, in.ID); ok {
				call = n
			}
			if err := add(checkpoint.WriteInterrupt, wireInterrupt{InterruptInfo: in, Call: call}); err != nil {
				return nil, err
			}
		}
	case !t.ran && !t.done:
		// not run yet (a breakpoint stopped before it): the marker and
		// the answers below
	case t.err != nil:
		if err := add(checkpoint.WriteError, t.err.Error()); err != nil {
			return nil, err
		}
	default:
		off := len(out)
		for _, w := range t.writes {
			b, err := w.key.self.encodeWrite(w)
			if err != nil {
				return nil, err
			}
			if err := add(w.key.name, b); err != nil {
				return nil, err
			}
		}
		if int(t.idx) < len(r.b.pw) { // for the step's checkpoint (see encodedWrite)
			r.b.pw[t.idx] = taskEnc{t, out[off : off+len(t.writes)]}
		}
		if len(t.routes) == 0 { // most tasks: json.Marshal's bytes, without its reflection
			out = append(out, checkpoint.PendingWrite{TaskID: id, Index: len(out), Key: checkpoint.WriteGoto, Value: noRoutes(t.viaGoto)})
			return out, nil
		}
		routes := wireRoutes{Goto: t.viaGoto, Targets: []wireTarget{}}
		for _, tg := range t.routes {
			wt := wireTarget{Node: tg.node, Send: tg.send}
			if tg.send {
				n := r.g.nodes[r.g.byName[tg.node]]
				if !n.takesPayload || !n.acceptsPayload(tg.payload) {
					return nil, fmt.Errorf("a Send to %q carries a %T it cannot take", tg.node, tg.payload)
				}
				p, err := n.encodePayload(tg.payload)
				if err != nil {
					return nil, fmt.Errorf("encode the payload sent to %q: %w", tg.node, err)
				}
				wt.Payload = p
			}
			routes.Targets = append(routes.Targets, wt)
		}
		if err := add(checkpoint.WriteGoto, routes); err != nil {
			return nil, err
		}
		return out, nil // a finished task needs no answers any more
	}
	// Answers given so far (and breakpoints passed) survive every outcome
	// short of finishing, so nothing is asked or stopped at twice.
	for _, call := range slices.Sorted(maps.Keys(t.in.answerMap())) {
		if err := add(checkpoint.WriteResume, wireAnswer{ID: fmt.Sprintf("%s:%d", id, call), Value: t.in.answerMap()[call]}); err != nil {
			return nil, err
		}
	}
	for _, aid := range slices.Sorted(maps.Keys(t.in.nestedMap())) {
		if err := add(checkpoint.WriteResume, wireAnswer{ID: aid, Value: t.in.nestedMap()[aid]}); err != nil {
			return nil, err
		}
	}
	if t.in != nil {
		for s := range t.in.savedSteps {
			if err := add(checkpoint.WriteStep, s.enc); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// breakpoint describes a task's static breakpoint.
func (r *run) breakpoint(t *task, kind InterruptKind) wireInterrupt {
	return wireInterrupt{
		InterruptInfo: InterruptInfo{ID: t.ID() + ":" + string(kind), Node: t.node.name, Namespace: r.ns, Kind: kind},
		Call:          -1,
		Static:        string(kind),
	}
}

// saveTask stores a task's pending writes right after it ran, so a crash
// later in the step does not run it again.
func (r *run) saveTask(t *task) error {
	if r.cfg.saver == nil || r.cpID == "" {
		return nil
	}
	if r.cfg.durability == DurabilityExit && !r.finishing() {
		// finish writes them when the run ends: those of the first step
		// to the checkpoint the run started from, as DurabilitySync would
		// have; those of later steps with the run's final checkpoint.
		if r.x.commits > 0 {
			return nil
		}
		ws, err := r.taskWrites(t)
		if err != nil {
			return fmt.Errorf("graph: encode the pending writes of node %q: %w", t.node.name, err)
		}
		r.hold(heldWrites{cp: r.cpID, task: t.ID(), node: t.node.name, ws: ws})
		return nil
	}
	return r.putTaskWrites(t)
}

// hold keeps pending writes for finish, replacing those held for the same
// task (DurabilityExit).
func (r *run) hold(h heldWrites) {
	x := r.x // allocated by execute under DurabilityExit
	x.heldMu.Lock()
	defer x.heldMu.Unlock()
	for i := range x.held {
		if x.held[i].cp == h.cp && x.held[i].task == h.task {
			x.held[i] = h
			return
		}
	}
	x.held = append(x.held, h)
}

// putTaskWrites stores a task's pending writes now, or through the async
// writer.
func (r *run) putTaskWrites(t *task) error {
	if err := r.flushInput(); err != nil { // they refer to it (see nestedfold.go)
		return err
	}
	ws, err := r.taskWrites(t)
	if err != nil {
		return fmt.Errorf("graph: encode the pending writes of node %q: %w", t.node.name, err)
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}
	node := t.node.name
	var id string
	if len(ws) > 0 {
		id = ws[0].TaskID // formatted once, by taskWrites
	} else {
		id = t.ID()
	}
	added := t.in.appendable(r.cpID, ws) // a durable step: one new write
	do := func() error {
		if err := r.putWrites(ref, id, ws, added); err != nil {
			return fmt.Errorf("graph: save the pending writes of node %q: %w", node, err)
		}
		return nil
	}
	if r.w != nil {
		r.w.submit(do)
		return nil
	}
	err = do()
	if err != nil && t.in != nil {
		t.in.saved = savedWrites{} // unknown now: the next save rewrites them all
	}
	return err
}

// ownCall reports the call index of an interrupt raised by the task itself
// ("taskID:n"), as opposed to one raised by a run nested in it.
func ownCall(taskID, interruptID string) (int, bool) {
	rest, ok := strings.CutPrefix(interruptID, taskID+":")
	if !ok {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(rest, "%d", &n); err != nil || fmt.Sprint(n) != rest {
		return 0, false
	}
	return n, true
}

// restoreTasks reads the pending writes of the restored checkpoint's next
// tasks: finished tasks get their writes and targets back and will not run;
// interrupted tasks get their interrupts and answers; breakpoints after the
// step that made the checkpoint are listed as waiting until passed.
func (r *run) restoreTasks(writes []checkpoint.PendingWrite, fail func(error) (bool, error)) error {
	byTask := map[string][]checkpoint.PendingWrite{}
	for _, w := range writes {
		byTask[w.TaskID] = append(byTask[w.TaskID], w)
	}
	for _, t := range r.next {
		ws := byTask[t.ID()]
		delete(byTask, t.ID())
		if err := r.restoreTask(t, ws); err != nil {
			_, err = fail(err)
			return err
		}
	}
	return r.restoreRest(byTask, fail)
}

// restoreTask gives one task what its pending writes say.
func (r *run) restoreTask(t *task, ws []checkpoint.PendingWrite) error {
	if len(ws) == 0 {
		return nil
	}
	fail := func(err error) (bool, error) { return false, err }
	finished := false
	var state []checkpoint.PendingWrite
	var prior []wireInterrupt
	for _, w := range ws {
		switch w.Key {
		case checkpoint.WriteInterrupt:
			wi, err := decodeInterrupt(w.Value)
			if err != nil {
				_, err = fail(fmt.Errorf("task %s: %w", t.ID(), err))
				return err
			}
			if wi.Static == string(InterruptBefore) {
				t.passed = true
			}
			prior = append(prior, wi)
		case checkpoint.WriteResume:
			var wa wireAnswer
			if err := json.Unmarshal(w.Value, &wa); err != nil {
				_, err = fail(fmt.Errorf("task %s: decode answer: %w", t.ID(), err))
				return err
			}
			t.answer(wa.ID, wa.Value)
		case checkpoint.WriteGoto:
			var wr wireRoutes
			if err := json.Unmarshal(w.Value, &wr); err != nil {
				_, err = fail(fmt.Errorf("task %s: decode targets: %w", t.ID(), err))
				return err
			}
			routes, err := r.decodeRoutes(wr)
			if err != nil {
				_, err = fail(fmt.Errorf("task %s: %w", t.ID(), err))
				return err
			}
			t.routes, t.viaGoto, finished = routes, wr.Goto, true
		case checkpoint.WriteError:
			var text string
			if err := json.Unmarshal(w.Value, &text); err == nil {
				t.intr().lastErr = text
			}
		case checkpoint.WriteStep:
			var s wireStep
			if err := json.Unmarshal(w.Value, &s); err != nil {
				_, err = fail(fmt.Errorf("task %s: decode step: %w", t.ID(), err))
				return err
			}
			s.enc = w.Value
			if s.Call < 0 || !t.intr().addStep(s) {
				_, err := fail(fmt.Errorf("task %s: saved step %q has call index %d, which is negative or saved twice", t.ID(), s.Name, s.Call))
				return err
			}
		default:
			state = append(state, w)
		}
	}
	if !finished {
		for _, wi := range prior {
			// A breakpoint passed before is history, not a stop.
			if !(wi.Kind == InterruptBefore && t.answered(wi.ID)) {
				t.intr().prior = append(t.intr().prior, wi)
			}
		}
		if len(t.in.priorList()) > 0 {
			t.waiting = true // until an answer arrives (see answerAll)
		}
		return nil // failed, interrupted or nothing recorded: it runs again
	}
	for _, w := range state {
		i, ok := r.g.sch.byName(w.Key)
		if !ok {
			_, err := fail(fmt.Errorf("task %s wrote key %q, which this graph's schema lacks", t.ID(), w.Key))
			return err
		}
		dw, err := r.g.sch.keys[i].decodeWrite(w.Value)
		if err != nil {
			_, err = fail(fmt.Errorf("task %s: %w", t.ID(), err))
			return err
		}
		t.writes = append(t.writes, dw)
	}
	t.done = true
	return nil
}

// restoreRest reads the pending writes that belong to no next task: a
// command's, breakpoints after the previous step, and those of tasks a
// restored command adds (kept for command).
func (r *run) restoreRest(byTask map[string][]checkpoint.PendingWrite, fail func(error) (bool, error)) error {
	// A command given to an earlier attempt of the step (see WithCommand).
	if ws, ok := byTask[commandTaskID]; ok {
		delete(byTask, commandTaskID)
		ct := &task{r: r, node: r.g.start, step: r.step + 1}
		for _, w := range ws {
			switch w.Key {
			case checkpoint.WriteGoto:
				var wr wireRoutes
				if err := json.Unmarshal(w.Value, &wr); err != nil {
					_, err = fail(fmt.Errorf("command: decode targets: %w", err))
					return err
				}
				routes, err := r.decodeRoutes(wr)
				if err != nil {
					_, err = fail(fmt.Errorf("command: %w", err))
					return err
				}
				ct.routes = routes
				ids := make([]string, len(wr.Targets))
				for i, wt := range wr.Targets {
					ids[i] = wt.Task
				}
				r.extra().commandIDs = ids
			default:
				i, ok := r.g.sch.byName(w.Key)
				if !ok {
					_, err := fail(fmt.Errorf("a command wrote key %q, which this graph's schema lacks", w.Key))
					return err
				}
				dw, err := r.g.sch.keys[i].decodeWrite(w.Value)
				if err != nil {
					_, err = fail(fmt.Errorf("command: %w", err))
					return err
				}
				ct.writes = append(ct.writes, dw)
			}
		}
		r.extra().command = ct
	}
	// What is left belongs to tasks of the step before the checkpoint:
	// breakpoints after them.
	for _, id := range slices.Sorted(maps.Keys(byTask)) {
		mark := afterMark{task: id}
		for _, w := range byTask[id] {
			switch w.Key {
			case checkpoint.WriteInterrupt:
				wi, err := decodeInterrupt(w.Value)
				if err != nil {
					_, err = fail(fmt.Errorf("task %s: %w", id, err))
					return err
				}
				mark.info = wi.InterruptInfo
			case checkpoint.WriteResume:
				mark.passed = true
			}
		}
		if mark.info.Kind == InterruptAfter {
			r.extra().after = append(r.extra().after, mark)
		} else if r.x != nil && r.x.command != nil {
			if r.x.orphans == nil {
				r.x.orphans = map[string][]checkpoint.PendingWrite{}
			}
			r.x.orphans[id] = byTask[id]
		}
	}
	return nil
}

// decodeInterrupt reads a saved interrupt, filling in the kind of records
// written before interrupts had one.
func decodeInterrupt(b []byte) (wireInterrupt, error) {
	var wi wireInterrupt
	if err := json.Unmarshal(b, &wi); err != nil {
		return wi, fmt.Errorf("decode interrupt: %w", err)
	}
	if wi.Kind == "" {
		switch wi.Static {
		case string(InterruptBefore), string(InterruptAfter):
			wi.Kind = InterruptKind(wi.Static)
		default:
			wi.Kind = InterruptNode
		}
	}
	return wi, nil
}

// afterMark is a breakpoint after a task of the step that made the current
// checkpoint: listed as waiting until a resume passes it.
type afterMark struct {
	task   string // the finished task's ID, under which the mark is saved
	info   InterruptInfo
	passed bool
}

// saveAfter stores an after-breakpoint's mark (and, once passed, its pass)
// as pending writes of the checkpoint it follows.
func (r *run) saveAfter(m afterMark) error {
	wi := wireInterrupt{InterruptInfo: m.info, Call: -1, Static: string(InterruptAfter)}
	b, err := json.Marshal(wi)
	if err != nil {
		return err
	}
	ws := []checkpoint.PendingWrite{{TaskID: m.task, Index: 0, Key: checkpoint.WriteInterrupt, Value: b}}
	if m.passed {
		a, err := json.Marshal(wireAnswer{ID: m.info.ID, Value: json.RawMessage("null")})
		if err != nil {
			return err
		}
		ws = append(ws, checkpoint.PendingWrite{TaskID: m.task, Index: 1, Key: checkpoint.WriteResume, Value: a})
	}
	if r.cfg.durability == DurabilityExit && !r.finishing() {
		r.hold(heldWrites{cp: r.cpID, task: m.task, node: m.info.Node, ws: ws})
		return nil
	}
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: r.cpID}
	do := func() error {
		if err := r.cfg.saver.PutWrites(r.ctx, ref, m.task, ws); err != nil {
			return fmt.Errorf("graph: save the breakpoint after node %q: %w", m.info.Node, err)
		}
		return nil
	}
	if r.w != nil {
		r.w.submit(do)
		return nil
	}
	return do()
}

func (r *run) decodeRoutes(wr wireRoutes) ([]Target, error) {
	out := make([]Target, 0, len(wr.Targets))
	for _, wt := range wr.Targets {
		tg := Target{node: wt.Node, send: wt.Send}
		if wt.Send {
			i, ok := r.g.byName[wt.Node]
			if !ok || !r.g.nodes[i].takesPayload {
				return nil, fmt.Errorf("a saved Send targets %q, which is not a payload node of this graph", wt.Node)
			}
			p, err := r.g.nodes[i].decodePayload(wt.Payload)
			if err != nil {
				return nil, fmt.Errorf("decode the payload sent to %q: %w", wt.Node, err)
			}
			tg.payload = p
		} else if _, ok := r.g.byName[wt.Node]; !ok && wt.Node != END {
			return nil, fmt.Errorf("a saved target names node %q, which this graph lacks", wt.Node)
		}
		out = append(out, tg)
	}
	return out, nil
}

// answer records an answer for one of the task's interrupts.
func (t *task) answer(id string, v json.RawMessage) {
	if call, ok := ownCall(t.ID(), id); ok {
		in := t.intr()
		if in.answers == nil {
			in.answers = map[int]json.RawMessage{}
		}
		in.answers[call] = v
		return
	}
	in := t.intr()
	if in.nested == nil {
		in.nested = map[string]json.RawMessage{}
	}
	in.nested[id] = v
}

// waitingFor lists the interrupts of restored tasks that have no answer
// yet, and the breakpoints after the last step not yet passed.
func (r *run) waitingFor() []InterruptInfo {
	var out []InterruptInfo
	if r.x != nil {
		for _, m := range r.x.after {
			if !m.passed {
				out = append(out, m.info)
			}
		}
	}
	for _, t := range r.next {
		for _, wi := range t.in.priorList() {
			if !t.answered(wi.ID) {
				out = append(out, wi.InterruptInfo)
			}
		}
	}
	return out
}

func (t *task) answered(id string) bool {
	if call, ok := ownCall(t.ID(), id); ok {
		_, found := t.in.answerMap()[call]
		return found
	}
	_, found := t.in.nestedMap()[id]
	return found
}

// answerAll applies the answers a resumed run was given (top level) or
// inherited from its parent task (nested), saves them, and decides which
// interrupted tasks run again: those with an answer for an interrupt that
// stopped them. strict runs report answers that match no waiting interrupt.
func (r *run) answerAll(answers map[string]json.RawMessage, strict bool) error {
	waiting := r.waitingFor()
	known := map[string]bool{}
	for _, w := range waiting {
		known[w.ID] = true
	}
	if strict {
		for _, id := range slices.Sorted(maps.Keys(answers)) {
			if !known[id] {
				return fmt.Errorf("graph: no interrupt %q is waiting for an answer; waiting: %s", id, ids(waiting))
			}
		}
	}
	if r.x != nil {
		for i := range r.x.after {
			m := &r.x.after[i]
			if _, ok := answers[m.info.ID]; ok && !m.passed {
				m.passed = true
				r.dirty = true
				if err := r.saveAfter(*m); err != nil {
					return err
				}
			}
		}
	}
	for _, t := range r.next {
		if len(t.in.priorList()) == 0 {
			continue
		}
		changed, stopAnswered := false, false
		for _, wi := range t.in.priorList() {
			if v, ok := answers[wi.ID]; ok && !t.answered(wi.ID) {
				t.answer(wi.ID, v)
				changed = true
			}
			stopAnswered = stopAnswered || t.answered(wi.ID)
		}
		if !stopAnswered {
			continue // still waiting: it stays interrupted and does not run
		}
		t.waiting = false
		if changed {
			r.dirty = true
			for _, wi := range t.in.priorList() {
				t.intr().raised = append(t.intr().raised, wi.InterruptInfo) // keep them until it runs
			}
			if err := r.saveTask(t); err != nil {
				return err
			}
			t.intr().raised = nil
		}
	}
	return nil
}

func ids(infos []InterruptInfo) string {
	if len(infos) == 0 {
		return "none"
	}
	parts := make([]string, len(infos))
	for i, in := range infos {
		parts[i] = fmt.Sprintf("%s (node %q)", in.ID, in.Node)
	}
	return strings.Join(parts, ", ")
}
