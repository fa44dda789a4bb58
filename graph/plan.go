package graph

import (
	"bytes"
	"fmt"
	"slices"
	"unsafe"
)

// Planning: which tasks the next step runs, from the routes, edges and
// joins of the tasks that just committed.

// plan computes the next step's tasks from the committed tasks' routes.
// afterCommit spells it out, to save a call a step.
func (r *run) plan(tasks []*task) error {
	if r.keepNext {
		return nil
	}
	if len(tasks) == 1 && r.planChain(tasks[0]) {
		return nil
	}
	return r.planAll(tasks)
}

// planAll is plan for any step.
func (r *run) planAll(tasks []*task) error {
	pull, push := r.b.touched[:0], r.b.push[:0] // apply is done with touched
	trigger := func(from *task, to int) error {
		if to == endIdx {
			return nil
		}
		n := r.g.nodes[to]
		if n.takesPayload {
			return fmt.Errorf("graph: node %q triggered %q by an edge, but %q takes a payload; reach it with graph.Send", from.node.name, n.name, n.name)
		}
		if r.b.marks[to] == r.step+1 {
			return nil
		}
		r.b.marks[to] = r.step + 1
		if n.deferred {
			if !slices.Contains(r.deferred, to) {
				r.deferred = append(r.deferred, to)
			}
			return nil
		}
		pull = append(pull, to)
		return nil
	}
	// Size the buffers once for what the step can trigger (a fan-out's
	// source triggers all its targets at once), not by doubling.
	most, sends := 0, 0
	for _, t := range tasks {
		most += len(t.routes)
		if !t.viaGoto {
			most += len(t.node.succ) + len(t.node.joins)
		}
		for _, tg := range t.routes {
			if tg.send {
				sends++
			}
		}
	}
	pull = slices.Grow(pull, min(most, len(r.g.nodes)))
	push = slices.Grow(push, sends)
	for _, t := range tasks {
		if t.viaGoto {
			for _, tg := range t.routes {
				if tg.send {
					push = append(push, tg)
				} else if err := trigger(t, r.index(tg.node)); err != nil {
					return err
				}
			}
			continue
		}
		for _, s := range t.node.succ {
			if err := trigger(t, s); err != nil {
				return err
			}
		}
		for k, j := range t.node.joins {
			seen := r.b.seen[j]
			seen[t.node.joinAt[k]] = true
			if allSeen(seen) {
				clear(seen)
				if err := trigger(t, r.g.joins[j].to); err != nil {
					return err
				}
			}
		}
		for _, tg := range t.routes { // conditional and fan-out targets
			if tg.send {
				push = append(push, tg)
			} else if err := trigger(t, r.index(tg.node)); err != nil {
				return err
			}
		}
	}
	slices.Sort(pull)
	r.b.touched = pull[:0]
	var next []*task
	if w := len(pull) + len(push); cap(r.spare) == 0 && w > 0 {
		// A run's first plan: one allocation for this step's slice and
		// the next step's (superstep hands this one back as spare).
		buf := make([]*task, 2*w)
		next, r.spare = buf[:0:w], buf[w:w]
	} else {
		next = slices.Grow(r.spare[:0], w)
		r.spare = nil // next owns it now
	}
	for j, i := range pull {
		t := r.newTask(len(pull) - j)
		t.r, t.node, t.idx, t.step = r, r.g.nodes[i], int32(len(next)), r.step+1
		next = append(next, t)
	}
	if r.wants(EventTaskStart) {
		r.triggers(tasks, next)
	}
	if len(push) > 0 {
		slab := make([]task, len(push)) // one allocation for all of a step's Sends
		for i, tg := range push {
			t := &slab[i]
			*t = task{r: r, node: r.g.nodes[r.g.byName[tg.node]], push: true, seq: int32(i), payload: tg.payload, step: r.step + 1, idx: int32(len(next))}
			next = append(next, t)
			if r.wants(EventTaskStart) {
				t.intr().triggers = []string{pushers(tasks, i)}
			}
		}
		clear(push) // drop payload references
		r.b.push = push[:0]
	}
	if len(next) == 0 && len(r.deferred) > 0 {
		slices.Sort(r.deferred)
		for j, i := range r.deferred {
			t := r.newTask(len(r.deferred) - j)
			t.r, t.node, t.idx, t.step = r, r.g.nodes[i], int32(len(next)), r.step+1
			next = append(next, t)
		}
		r.deferred = r.deferred[:0]
	}
	r.next = next
	return nil
}

// planChain is plan for a step whose one task follows a single plain edge
// to a node that takes no payload and is not deferred: a chain's step. It
// schedules what plan would (the same task, marks and spare slice) without
// plan's closure, buffer sizing and sort (TestPlanChainLikePlanAll), and
// reports false, having done nothing, for any other step.
func (r *run) planChain(t *task) bool {
	n := t.node
	if t.viaGoto || len(t.routes) > 0 || len(n.succ) != 1 || len(n.joins) > 0 || len(r.deferred) > 0 || r.wants(EventTaskStart) {
		return false
	}
	to := n.succ[0]
	if to == endIdx || r.b.marks[to] == r.step+1 {
		return false
	}
	dst := r.g.nodes[to]
	if dst.takesPayload || dst.deferred {
		return false
	}
	r.b.marks[to] = r.step + 1
	var next []*task
	if cap(r.spare) == 0 {
		buf := make([]*task, 2) // as plan's first allocation: this step's and the next's
		next, r.spare = buf[:0:1], buf[1:1]
	} else {
		next = r.spare[:0]
		r.spare = nil // next owns it now
	}
	nt := r.newTask(1)
	nt.r, nt.node, nt.idx, nt.step = r, dst, 0, r.step+1
	r.next = append(next, nt)
	return true
}

// allSeen reports whether every source of a join has finished. A wide
// join checks once per source that finishes, so the check reads the flags
// as bytes (a bool is one byte, 0 or 1) and lets IndexByte scan them.
func allSeen(seen []bool) bool {
	if len(seen) == 0 {
		return true
	}
	return bytes.IndexByte(unsafe.Slice((*byte)(unsafe.Pointer(&seen[0])), len(seen)), 0) < 0
}

// triggers records, for task events, which committed tasks scheduled each
// edge-triggered next task: those with an edge, route or goto to its node.
func (r *run) triggers(tasks, next []*task) {
	for _, n := range next {
		var from []string
		for _, t := range tasks {
			hit := slices.ContainsFunc(t.routes, func(tg Target) bool { return !tg.send && tg.node == n.node.name })
			if !t.viaGoto {
				hit = hit || slices.Contains(t.node.succ, n.node.idx)
				for _, j := range t.node.joins {
					hit = hit || r.g.joins[j].to == n.node.idx
				}
			}
			if hit && !slices.Contains(from, t.node.name) {
				from = append(from, t.node.name)
			}
		}
		n.intr().triggers = from
	}
}

// pushers names the task that made the i-th Send of a step.
func pushers(tasks []*task, i int) string {
	for _, t := range tasks {
		for _, tg := range t.routes {
			if tg.send {
				if i == 0 {
					return t.node.name
				}
				i--
			}
		}
	}
	return ""
}

func (r *run) index(node string) int {
	if node == END {
		return endIdx
	}
	return r.g.byName[node]
}
