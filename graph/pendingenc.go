package graph

import "github.com/trellis-agents/trellis/checkpoint"

// A parallel step's tasks save their pending writes as they finish, each
// write encoded as a delta holds it (Key.appendWrite). The step's
// checkpoint then takes those bytes for its deltas instead of encoding the
// writes again: taskWrites leaves each task's in runBufs.pw, apply lines
// them up with the step's log of writes per key (runBufs.stepEnc beside
// run.stepLog), and blob hands them to deltaData through takeEncodings.

// encodedWrite returns the encoding of task t's write j that its pending
// writes hold (runBufs.pw, see taskWrites), or nil when they were not
// encoded this step. It is k.appendWrite's, the same bytes a delta holds
// for the write.
func (r *run) encodedWrite(t *task, j int) []byte {
	if int(t.idx) >= len(r.b.pw) {
		return nil
	}
	e := r.b.pw[t.idx]
	if e.t != t || j >= len(e.ws) || e.ws[j].Key != t.writes[j].key.name {
		return nil
	}
	return e.ws[j].Value
}

// taskEnc is a task's writes as its pending writes encoded them (see
// runBufs.pw).
type taskEnc struct {
	t  *task
	ws []checkpoint.PendingWrite
}

// noRoutes is the encoding of a finished task's wireRoutes when it chose no
// targets, as json.Marshal gives it (a new slice each time: a saver may
// keep it).
func noRoutes(viaGoto bool) []byte {
	if viaGoto {
		return []byte(`{"goto":true,"targets":[]}`)
	}
	return []byte(`{"targets":[]}`)
}

// takeEncodings returns the encodings of key i's n logged writes
// (stepLog[i] before the save reset it) when every one of them was logged
// in runBufs.stepEnc (some entries may still be nil), and resets them: nil
// when they were not, and, at the cost of a test, in a run whose steps
// never left any.
func (r *run) takeEncodings(i, n int) [][]byte {
	if r.b == nil || len(r.b.stepEnc) <= i {
		return nil
	}
	encs := r.b.stepEnc[i]
	r.b.stepEnc[i] = encs[:0]
	if len(encs) != n {
		clear(encs)
		return nil
	}
	return encs
}

// dropEncodings forgets every key's logged encodings (a run restored from
// a checkpoint, or buffers going back to the pool).
func (b *runBufs) dropEncodings() {
	for i := range b.stepEnc {
		clear(b.stepEnc[i][:cap(b.stepEnc[i])])
		b.stepEnc[i] = b.stepEnc[i][:0]
	}
}
