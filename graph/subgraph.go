package graph

import (
	"context"
	"errors"
)

// runSubgraph runs g as the node whose context is ctx, starting from the
// parent snapshot's values of the keys both graphs share, and returns the
// subgraph's writes to those keys.
func runSubgraph(ctx context.Context, g *Graph, ps State) (Output, error) {
	if taskFrom(ctx) == nil {
		return nil, errors.New("graph: a subgraph node ran outside a graph task")
	}
	r, err := g.newRun(ctx, nil, nil, false)
	if err != nil {
		return nil, err
	}
	r.shared = map[int]bool{}
	stateful := taskFrom(ctx).node.stateful
	var invocation Update
	for i, k := range g.sch.keys {
		if j, ok := ps.sch.index[k.keyID()]; ok {
			p := ps.vals[j]
			r.state.vals[i] = slot{v: p.v, ver: p.ver, set: p.set}
			r.shared[i] = true
			if p.set && r.stepLog != nil {
				// The first checkpoint in the subgraph's namespace holds
				// the values it started from in full.
				r.stepLog[i] = append(r.stepLog[i], Write{key: k.ref(), op: opOverwrite, val: p.v})
			}
			if p.set && stateful {
				invocation = append(invocation, Write{key: k.ref(), op: opOverwrite, val: p.v})
			}
		}
	}
	if stateful {
		// Applied on top of the state a previous invocation left, if any.
		r.extra().invocation = append(Update{}, invocation...)
	}
	if _, err := r.execute(Update{}); err != nil {
		var pc *ParentCommandError
		if errors.As(err, &pc) && pc.Namespace == r.ns {
			// The parent takes what the subgraph wrote so far, then the
			// command's update.
			pc.Command.Update = append(collapse(r.log), pc.Command.Update...)
		}
		return nil, err
	}
	return collapse(r.log), nil
}

// collapse keeps, for each last-value key, only its final write: the parent
// takes one write per step for such keys. Reducer keys keep every write, in
// order, so the parent's reducer rebuilds what the subgraph built.
func collapse(log Update) Update {
	last := map[int64]int{}
	for i, w := range log {
		if w.key.self.lastValue() {
			last[w.key.id] = i
		}
	}
	if len(last) == 0 {
		return log
	}
	out := make(Update, 0, len(log))
	for i, w := range log {
		if w.key.self.lastValue() && last[w.key.id] != i {
			continue
		}
		out = append(out, w)
	}
	return out
}
