package graph

// A parallel step's tasks save their pending writes as they finish, each
// write encoded as a delta holds it (Key.appendWrite). The step's
// checkpoint then takes those bytes for its deltas instead of encoding the
// writes again: taskWrites leaves each task's in runBufs.pw, apply lines
// them up with the step's log of writes per key (runBufs.stepEnc beside
// run.stepLog), and save hands them to deltaData through encodingsOf.

// encodedWrite returns the encoding of task t's write j that its pending
// writes hold (runBufs.pw, see taskWrites), or nil when they were not
// encoded this step. It is k.appendWrite's, the same bytes a delta holds
// for the write.
func (r *run) encodedWrite(t *task, j int) []byte {
	if int(t.idx) >= len(r.b.pw) {
		return nil
	}
	pw := r.b.pw[t.idx]
	if j >= len(pw) || pw[j].Key != t.writes[j].key.name || pw[j].TaskID != t.ID() {
		return nil
	}
	return pw[j].Value
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

// encodingsOf returns the encodings of key i's logged writes (stepLog[i])
// when every one of them is known (some entries may still be nil), and
// resets them: nil when they are not all logged there.
func (r *run) encodingsOf(i int) [][]byte {
	if r.b == nil || len(r.b.stepEnc) <= i {
		return nil
	}
	encs := r.b.stepEnc[i]
	r.b.stepEnc[i] = encs[:0]
	if len(encs) != len(r.stepLog[i]) {
		clear(encs)
		return nil
	}
	return encs
}
