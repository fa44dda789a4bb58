package graph

import (
	"fmt"
	"slices"
)

// apply applies the tasks' writes to the state in task order, bumping the
// versions of the keys they touch, without planning or saving.
func (r *run) apply(tasks []*task) error {
	if len(tasks) == 1 && len(tasks[0].writes) == 1 {
		return r.applyOne(tasks[0])
	}
	touched, n := r.b.touched[:0], 0
	defer func() {
		for _, i := range touched {
			r.b.tally[i] = keyTally{}
		}
		r.b.touched = touched[:0]
	}()
	encoded := len(r.b.pw) > 0 // the tasks' pending writes may hold their writes' encodings
	if encoded {
		defer func() { clear(r.b.pw); r.b.pw = r.b.pw[:0] }()
	}
	for ti, t := range tasks {
		for _, w := range t.writes {
			i, _ := r.g.sch.slotOf(w.key.id)
			tl := &r.b.tally[i]
			if tl.count == 0 {
				touched = append(touched, i)
				tl.first = int32(ti)
			} else if w.key.self.lastValue() {
				return r.conflict(w.key.name, tasks[tl.first], t)
			}
			tl.count++
			n++
		}
	}
	if n == 0 {
		return nil
	}
	off := int32(0)
	for _, i := range touched {
		tl := &r.b.tally[i]
		tl.start, tl.next = off, off
		off += tl.count
	}
	ws := slices.Grow(r.b.ws[:0], n)[:n]
	defer func() { clear(ws); r.b.ws = ws[:0] }()
	var encs [][]byte // ws's encodings, for the checkpoint's deltas
	if encoded && r.stepLog != nil {
		encs = slices.Grow(r.b.encs[:0], n)[:n]
		defer func() { clear(encs); r.b.encs = encs[:0] }()
		if len(r.b.stepEnc) != len(r.stepLog) {
			r.b.stepEnc = make([][][]byte, len(r.stepLog))
		}
	}
	for _, t := range tasks {
		for j, w := range t.writes {
			i, _ := r.g.sch.slotOf(w.key.id)
			tl := &r.b.tally[i]
			ws[tl.next] = w
			if encs != nil {
				encs[tl.next] = r.encodedWrite(t, j)
			}
			tl.next++
		}
	}
	vals := r.newVals(len(r.state.vals))
	copy(vals, r.state.vals)
	for _, i := range touched {
		tl, k, sl := r.b.tally[i], r.g.sch.keys[i], &vals[i]
		kws := ws[tl.start : tl.start+tl.count]
		v, err := k.apply(sl.v, sl.set, kws)
		if err != nil {
			return fmt.Errorf("graph: step %d: applying the writes of %s: %w", r.step, writers(tasks, k), err)
		}
		sl.v, sl.set = v, true
		sl.ver = (sl.ver>>32+1)<<32 | uint64(r.tag())
		if r.stepLog != nil {
			if encs != nil && len(r.b.stepEnc[i]) == len(r.stepLog[i]) {
				r.b.stepEnc[i] = append(r.b.stepEnc[i], encs[tl.start:tl.start+tl.count]...)
			}
			r.stepLog[i] = append(r.stepLog[i], kws...)
		}
		if r.shared != nil && r.shared[i] {
			r.log = append(r.log, kws...)
		}
	}
	r.state = State{sch: r.g.sch, vals: vals}
	return nil
}

// applyOne is apply for a step whose only write is its one task's one
// write (a chain's node, say): nothing to group or count.
func (r *run) applyOne(t *task) error {
	w := t.writes[:1:1]
	i, _ := r.g.sch.slotOf(w[0].key.id)
	vals := r.newVals(len(r.state.vals))
	copyVals(vals, r.state.vals)
	k, sl := r.g.sch.keys[i], &vals[i]
	v, err := k.applyWrite(sl.v, sl.set, &w[0])
	if err != nil {
		return fmt.Errorf("graph: step %d: applying the writes of %s: %w", r.step, writers([]*task{t}, k), err)
	}
	sl.v, sl.set = v, true
	sl.ver = (sl.ver>>32+1)<<32 | uint64(r.tag())
	if r.stepLog != nil {
		r.stepLog[i] = append(r.stepLog[i], w...)
	}
	if r.shared != nil && r.shared[i] {
		r.log = append(r.log, w...)
	}
	r.state = State{sch: r.g.sch, vals: vals}
	return nil
}

// copyVals copies a state's slots into fresh ones: a few slots one by
// one (a slot is four words, copied in registers), which costs less than
// the runtime's typed slice copy for a chain's one or two keys; more with
// copy.
func copyVals(dst, src []slot) {
	if len(src) > 4 {
		copy(dst, src)
		return
	}
	//lint:ignore S1001 a loop, not copy: copy of slots is a typed slice copy through the runtime
	for i := range src {
		dst[i] = src[i]
	}
}
