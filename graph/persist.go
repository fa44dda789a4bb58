package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// deltaFactor is how many times the last full snapshot's size the deltas
// since it may reach before a new snapshot: snapshots of a growing value
// then sum to about 1.25 times its final size, and a rebuild reads at most
// five times the value.
const deltaFactor = 4

// maxChain bounds how many deltas a reducer key's chain may hold before a
// full snapshot, which bounds the work of rebuilding it on read.
const maxChain = 4096

// save writes a checkpoint after a commit. Only keys written in the step get
// a blob: a last-value key (or an overwritten one) gets its full value; a
// reducer key gets the step's writes as a delta, until the deltas since its
// last full snapshot outweigh twice that snapshot, when it gets a new full
// snapshot. Storage so grows with the changes, not with the history: the
// snapshots of a growing list sum to about 1.5 times its final size.
func (r *run) save(source checkpoint.Source) error {
	// The ID is drawn now, not when the versions' tag was (see tag): under
	// DurabilityExit that was at the run's first commit, before its
	// subgraphs saved theirs, and checkpoint IDs must sort by when they
	// were saved (a Stateful subgraph's replay looks "before" one).
	now := time.Now()
	// The save's small strings and data share one chunk: the run's, kept
	// from one save to the next while the run has its buffers.
	var own carver
	defer own.release()
	cv := &own
	if r.b != nil {
		cv = &r.b.cv
	}
	cp := checkpoint.Checkpoint{ID: cv.checkpointID(now), Created: now}
	sc := r.scratch()
	// The versions are gathered in a slice: checkpoint.Memory takes it as
	// it is (PutOwnedVersions), any other route gets a map (versionMap).
	var vers []checkpoint.KeyVersion
	var vp *[]checkpoint.KeyVersion
	if sc != nil {
		vers, cp.Blobs, cp.Next = sc.vers, sc.blobs, sc.next
	} else {
		vp = versPool.Get().(*[]checkpoint.KeyVersion)
		vers = (*vp)[:0]
	}
	r.nextTag = 0
	parent, parentOwn := r.cpID, r.ownCP
	r.cpID = cp.ID // next tasks' IDs derive from the checkpoint they follow
	r.ownCP = true // drawn here: no other run's tasks derive IDs from it
	for i, sl := range r.state.vals {
		if !sl.set {
			continue
		}
		k := r.g.sch.keys[i]
		vers = append(vers, checkpoint.KeyVersion{Key: k.Name(), Version: sl.ver})
		ws := r.stepLog[i]
		if len(ws) == 0 {
			continue
		}
		r.stepLog[i] = ws[:0]
		b, err := r.blob(cv, i, k, sl, ws)
		r.savedVer[i] = sl.ver
		if err != nil {
			return fmt.Errorf("graph: checkpoint of thread %q at step %d: %w", r.cfg.thread, r.step, err)
		}
		cp.Blobs = append(cp.Blobs, b)
	}
	if r.shared != nil && (len(r.log) > r.logAt || r.x != nil && r.x.logRestart) {
		b, err := r.logBlob(cp.ID)
		if err != nil {
			return fmt.Errorf("graph: checkpoint of thread %q at step %d: %w", r.cfg.thread, r.step, err)
		}
		cp.Blobs = append(cp.Blobs, b)
	}
	if r.logVer > 0 {
		vers = append(vers, checkpoint.KeyVersion{Key: logKey, Version: r.logVer})
	}
	vers = r.contextBlob(&cp, vers)
	if sc == nil {
		cp.Versions = versionMap(vers)
		if cap(vers) <= maxScratch {
			clear(vers)
			*vp = vers[:0]
			versPool.Put(vp)
		}
	}
	for _, t := range r.next {
		ct := checkpoint.Task{ID: t.sum().carveHex(cv), Node: t.node.name, Path: t.path()}
		if t.push {
			p, err := t.node.encodePayload(t.payload)
			if err != nil {
				return fmt.Errorf("graph: checkpoint of thread %q at step %d: encode the payload sent to %q: %w", r.cfg.thread, r.step, t.node.name, err)
			}
			ct.Payload = p
		}
		cp.Next = append(cp.Next, ct)
	}
	if r.x != nil && r.x.pending != nil {
		st, err := r.startTask(r.step)
		if err != nil {
			return fmt.Errorf("graph: checkpoint of thread %q at step %d: %w", r.cfg.thread, r.step, err)
		}
		cp.Next = append(cp.Next, st)
	}
	for j, seen := range r.b.seen {
		for s, ok := range seen {
			if ok {
				if cp.Waiting == nil {
					cp.Waiting = map[string][]string{}
				}
				to := r.g.nodes[r.g.joins[j].to].name
				cp.Waiting[to] = append(cp.Waiting[to], r.g.nodes[r.g.joins[j].from[s]].name)
			}
		}
	}
	for _, d := range r.deferred {
		cp.Deferred = append(cp.Deferred, r.g.nodes[d].name)
	}
	step := r.step
	if r.uncommitted {
		step-- // the run stopped inside a step: the state is the last commit's
	}
	md := checkpoint.Metadata{Source: source, Step: step, Parent: parent, RunID: r.cfg.runID}
	if r.x != nil && r.x.holdCP {
		// (sc is nil here: see scratch)
		r.x.holdCP, r.x.heldCP = false, &heldCheckpoint{cp: cp, md: md}
		if r.x.pairCP && r.wants(EventCheckpoint) {
			// Delivered where an unheld checkpoint's event would be, so
			// the events keep their order.
			r.deliver(Event{Kind: EventCheckpoint, Step: step, Namespace: r.ns, Checkpoint: checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: cp.ID}})
		}
		return nil
	}
	var err error
	switch {
	case r.x != nil && r.x.pairCP && r.x.heldCP != nil:
		if sc != nil {
			cp.Versions = versionMap(vers)
		}
		err = r.putPair(cp, md) // the saver copies what it keeps
		r.releaseScratch(sc, cp.Blobs, cp.Next, vers)
	case sc == nil && r.holdFinal(cp, md):
		// Handed over: its containers are not reused.
	case sc != nil && r.mayHoldFinal(&md) && r.holdFinal(withVersions(cp, vers), md):
		// Handed over with a map of its own; the rest is not reused.
	case sc != nil:
		err = r.putMemory(&cp, vers, &md) // built for this Put alone
		r.releaseScratch(sc, cp.Blobs, cp.Next, vers)
	default:
		err = r.putOwned(cp, md) // built for this Put alone
	}
	if err != nil {
		r.cpID, r.ownCP = parent, parentOwn
		return err
	}
	r.dirty = false
	if r.wants(EventCheckpoint) {
		r.deliver(Event{Kind: EventCheckpoint, Step: step, Namespace: r.ns, Checkpoint: checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns, ID: cp.ID}})
	}
	return nil
}

// saveScratch holds the versions map and the blob and task slices of a
// checkpoint that the in-memory saver copies and does not keep (see
// checkpoint.Memory.PutOwned), for the next save to reuse: with
// checkpoint.Memory a step's save then allocates no containers.
type saveScratch struct {
	vers  []checkpoint.KeyVersion
	blobs []checkpoint.Blob
	next  []checkpoint.Task
}

var scratchPool = sync.Pool{New: func() any { return new(saveScratch) }}

// versPool holds the slices a save gathers its versions in when the
// checkpoint gets a map of them (any saver but checkpoint.Memory).
var versPool = sync.Pool{New: func() any { return new([]checkpoint.KeyVersion) }}

// maxScratch bounds the entries of a scratch map or slice kept for reuse,
// so that one wide graph does not leave every pooled map wide.
const maxScratch = 256

// scratch returns reusable containers for a checkpoint that goes straight
// to checkpoint.Memory's PutOwned, or nil when the checkpoint is held
// (DurabilityExit), stored later (DurabilityAsync) or by another saver,
// which may keep what it is given.
func (r *run) scratch() *saveScratch {
	if r.w != nil || r.x != nil && r.x.holdCP {
		return nil
	}
	if _, ok := r.cfg.saver.(*checkpoint.Memory); !ok {
		return nil
	}
	if r.b != nil && r.b.sc != nil {
		sc := r.b.sc
		r.b.sc = nil // taken: a save handed over, or failed, does not return it
		return sc
	}
	return scratchPool.Get().(*saveScratch)
}

// releaseScratch clears a checkpoint's containers (its blobs and next
// tasks, and its versions), which PutOwned has copied, and
// keeps them for the run's next save (or puts them back in the pool when
// the run has no buffers). A nil scratch does nothing.
func (r *run) releaseScratch(sc *saveScratch, blobs []checkpoint.Blob, next []checkpoint.Task, vers []checkpoint.KeyVersion) {
	if sc == nil {
		return
	}
	if cap(vers) > maxScratch || cap(blobs) > maxScratch || cap(next) > maxScratch {
		return
	}
	sc.vers, sc.blobs, sc.next = vers[:0], blobs[:0], next[:0]
	if r.b != nil && r.b.sc == nil {
		// Kept by the run, not cleared: the next save writes over what
		// it uses, everything they point to is the saver's now, and
		// putBuffers clears them. Clearing pointers each step cost as
		// much as the rest of this function.
		r.b.sc = sc
		return
	}
	sc.put()
}

// put clears sc's containers (the blobs' data and the tasks' IDs now
// belong to the saver) and puts sc back in the pool.
func (sc *saveScratch) put() {
	clear(sc.vers[:cap(sc.vers)])
	clear(sc.blobs[:cap(sc.blobs)])
	clear(sc.next[:cap(sc.next)])
	scratchPool.Put(sc)
}

// versionMap returns a checkpoint's versions as Checkpoint.Versions holds
// them.
func versionMap(vers []checkpoint.KeyVersion) map[string]uint64 {
	m := make(map[string]uint64, len(vers))
	for _, kv := range vers {
		m[kv.Key] = kv.Version
	}
	return m
}

// withVersions returns cp with its versions, vers, as a map.
func withVersions(cp checkpoint.Checkpoint, vers []checkpoint.KeyVersion) checkpoint.Checkpoint {
	cp.Versions = versionMap(vers)
	return cp
}

// fork starts a new branch before replaying from an older checkpoint: it
// saves a copy of that checkpoint (source "fork", its parent the one
// replayed) as the thread's new head, whatever the durability, and gives
// the tasks to run new IDs derived from it. The replay's pending writes,
// interrupts and subgraph namespaces so belong to the branch, which can be
// resumed, updated and forked again, and the old branch's checkpoints and
// pending writes stay as they were.
func (r *run) fork() error {
	for _, t := range r.next {
		t.hashed = false
	}
	return r.save(checkpoint.SourceFork)
}

// blob encodes key i's blob of the checkpoint being saved: a delta of
// its logged writes ws (with the encodings a parallel step's tasks left
// for them, see takeEncodings) or its full value sl.
func (r *run) blob(cv *carver, i int, k keyImpl, sl slot, ws []Write) (checkpoint.Blob, error) {
	encs := r.takeEncodings(i, len(ws))
	b := checkpoint.Blob{Key: k.Name(), Version: sl.ver}
	// A delta must follow the saved version directly (under DurabilityExit
	// several steps may have passed since the last save).
	full := k.lastValue() || r.savedVer[i] == 0 || r.chain[i].deltas >= maxChain || r.savedVer[i]>>32+1 != sl.ver>>32
	for _, w := range ws {
		full = full || w.op == opOverwrite
	}
	c := &r.chain[i]
	if limit := deltaFactor*c.fullBytes - c.deltaBytes; !full && limit >= minDelta {
		data, fits, err := deltaData(k, ws, encs, limit)
		clear(encs) // the pending writes' bytes, not kept past the save
		if err != nil {
			return b, err
		}
		if fits {
			c.deltas++
			c.deltaBytes += len(data)
			b.Kind, b.Base, b.Data = checkpoint.Delta, r.savedVer[i], data
			return b, nil
		}
	}
	clear(encs)
	data, err := encodeFull(cv, k, sl.v)
	if err != nil {
		return b, err
	}
	r.chain[i] = chainInfo{fullBytes: len(data)}
	b.Kind, b.Data = checkpoint.Full, data
	return b, nil
}

// minDelta is the length of the shortest delta data, one write of a
// one-byte value: [{"v":1}]. A delta allowed less is not encoded at all (a
// small counter's full value is shorter than its delta).
const minDelta = len(`[{"v":1}]`)

// encodeFull encodes a key's value for a full blob: the same JSON as
// k.encodeValue (json.Marshal's), encoded into a pooled buffer and copied
// out with carveBytes, so a small value costs no allocation of its own.
func encodeFull(cv *carver, k keyImpl, v any) ([]byte, error) {
	var buf [24]byte
	if b, ok := appendScalar(buf[:0], v); ok {
		return cv.bytes(b), nil // (a long string gets its own copy)
	}
	e := getWireEncoder()
	defer e.release()
	if err := e.value(v); err != nil {
		return nil, fmt.Errorf("state key %q: encode %T: %w", k.Name(), v, err)
	}
	return cv.bytes(e.buf.Bytes()), nil
}

// chainInfo tracks a key's blob chain since its last full snapshot.
type chainInfo struct {
	fullBytes  int
	deltas     int
	deltaBytes int
}

// restore loads the thread's checkpoint — the latest, or the one named by
// WithCheckpointID — if any. It reports whether there was one.
func (r *run) restore() (bool, error) {
	if r.cfg.saver == nil || r.freshNS {
		return false, nil // nothing to read (see freshChild)
	}
	tup, err := r.load()
	if err != nil || tup == nil {
		return false, err
	}
	r.setBranchBound(tup)
	// Resuming the head reuses what its step's tasks left; a replay from an
	// older checkpoint runs that step again.
	head := tup.Ref.ID == r.headID
	if head && len(tup.Checkpoint.Next) > 0 && tup.Metadata.RunID != r.cfg.runID {
		r.extra().adopt = tup // see adopt
	}
	return r.restoreFrom(tup, head)
}

// adopt copies the head checkpoint, with its pending writes, under this
// run's ID (source "resume") before the run continues another run's
// pending work (an interrupt answered, a failure retried). Everything the
// run then writes — answers, task results, later checkpoints, in every
// namespace — belongs to its own checkpoints, so removing the run
// (Saver.DeleteRun) leaves the thread exactly as the earlier run left it.
// The next tasks keep their IDs, so subgraphs find their namespaces.
func (r *run) adopt(tup *checkpoint.Tuple) error {
	if err := r.save(checkpoint.SourceResume); err != nil {
		return err
	}
	return r.carryWrites(tup)
}

// load reads the checkpoint a run starts from and the namespace's head (the
// latest checkpoint, which the run's first Put must name). It returns nil
// for an empty namespace.
func (r *run) load() (*checkpoint.Tuple, error) {
	ref := checkpoint.Ref{ThreadID: r.cfg.thread, Namespace: r.ns}
	head, given, err := r.givenHead(ref)
	switch {
	case err != nil:
		return nil, err
	case given && head == nil:
		err = fmt.Errorf("graph: load %s: %w", ref, checkpoint.ErrNotFound)
	case !given:
		head, err = r.cfg.saver.Get(r.ctx, ref)
	}
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		if r.cfg.get().checkpointID != "" && r.parent == nil {
			return nil, fmt.Errorf("graph: thread %q has no checkpoint %s", r.cfg.thread, r.cfg.get().checkpointID)
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("graph: load %s: %w", ref, err)
	}
	r.headID = head.Ref.ID
	observeCheckpointID(head.Ref.ID) // the run's IDs sort after the head's
	if tup, ok, err := r.branchCheckpoint(ref); ok || err != nil {
		return tup, err
	}
	if r.cfg.get().checkpointID == "" || r.parent != nil || r.cfg.get().checkpointID == head.Ref.ID {
		return head, nil
	}
	ref.ID = r.cfg.get().checkpointID
	tup, err := r.cfg.saver.Get(r.ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("graph: load %s: %w", ref, err)
	}
	return tup, nil
}

// restoreFrom rebuilds the run's state, next tasks, join barriers and
// deferred nodes from a checkpoint.
func (r *run) restoreFrom(tup *checkpoint.Tuple, withWrites bool) (bool, error) {
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("graph: restore %s: %w", tup.Ref, err)
	}
	vals := r.state.vals
	replay := map[int][]Write{} // per key: its chain's delta writes, in order
	for _, b := range tup.Checkpoint.Blobs {
		if b.Key == logKey {
			if err := r.restoreLog(b); err != nil {
				return fail(err)
			}
			continue
		}
		if b.Key == ctxKey {
			if err := r.restoreContext(b); err != nil {
				return fail(err)
			}
			continue
		}
		i, ok := r.g.sch.byName(b.Key)
		if !ok {
			return fail(fmt.Errorf("it holds key %q, which this graph's schema lacks; add the key to graph.New or migrate the thread", b.Key))
		}
		k := r.g.sch.keys[i]
		sl := &vals[i]
		switch b.Kind {
		case checkpoint.Full:
			v, err := k.decodeValue(b.Data)
			if err != nil {
				return fail(err)
			}
			sl.v, sl.set = v, true
			delete(replay, i) // a full snapshot starts the chain over
			r.chain[i] = chainInfo{fullBytes: len(b.Data)}
		case checkpoint.Delta:
			if !sl.set || sl.ver != b.Base {
				return fail(fmt.Errorf("key %q: delta for version %d does not follow version %d", b.Key, b.Version, sl.ver))
			}
			var parts []json.RawMessage
			if err := json.Unmarshal(b.Data, &parts); err != nil {
				return fail(fmt.Errorf("key %q version %d: %w", b.Key, b.Version, err))
			}
			for _, p := range parts {
				w, err := k.decodeWrite(p)
				if err != nil {
					return fail(err)
				}
				replay[i] = append(replay[i], w) // applied once per key below
			}
			r.chain[i].deltas++
			r.chain[i].deltaBytes += len(b.Data)
		default:
			return fail(fmt.Errorf("key %q version %d: unknown blob kind %d", b.Key, b.Version, b.Kind))
		}
		sl.ver = b.Version
		r.savedVer[i] = b.Version
	}
	for i, ws := range replay {
		// One pass per key: merge-by-ID builds its index once per chain.
		v, err := r.g.sch.keys[i].apply(vals[i].v, vals[i].set, ws)
		if err != nil {
			return fail(err)
		}
		vals[i].v = v
	}
	for name, ver := range tup.Checkpoint.Versions {
		if name == logKey || name == ctxKey {
			continue
		}
		i, ok := r.g.sch.byName(name)
		if !ok || !vals[i].set || vals[i].ver != ver {
			return fail(fmt.Errorf("key %q: version %d in force, but its blobs rebuild version %d", name, ver, vals[i].ver))
		}
	}
	r.step, r.cpID, r.ownCP = tup.Metadata.Step, tup.Ref.ID, false
	for _, ct := range tup.Checkpoint.Next {
		if ct.Node == START {
			if err := r.restoreStart(ct); err != nil {
				return fail(err)
			}
			continue
		}
		i, ok := r.g.byName[ct.Node]
		if !ok {
			return fail(fmt.Errorf("its next task runs node %q, which this graph lacks", ct.Node))
		}
		h, ok := parseTaskID(ct.ID)
		if !ok {
			return fail(fmt.Errorf("next task %q: not a task ID", ct.ID))
		}
		t := &task{r: r, node: r.g.nodes[i], idx: int32(len(r.next)), step: r.step + 1, hash: h, hashed: true, restored: true}
		if seq, isSend := strings.CutPrefix(ct.Path, "send:"); isSend {
			n, err := strconv.Atoi(seq)
			if err != nil || !t.node.takesPayload {
				return fail(fmt.Errorf("next task %s: bad send path %q for node %q", ct.ID, ct.Path, ct.Node))
			}
			p, err := t.node.decodePayload(ct.Payload)
			if err != nil {
				return fail(fmt.Errorf("next task %s: decode payload for %q: %w", ct.ID, ct.Node, err))
			}
			t.push, t.seq, t.payload = true, int32(n), p
		}
		r.next = append(r.next, t)
	}
	if withWrites {
		if err := r.restoreTasks(tup.Writes, fail); err != nil {
			return false, err
		}
	}
	for to, froms := range tup.Checkpoint.Waiting {
		for j, cj := range r.g.joins {
			if r.g.nodes[cj.to].name != to {
				continue
			}
			for s, f := range cj.from {
				for _, name := range froms {
					if r.g.nodes[f].name == name {
						r.b.seen[j][s] = true
					}
				}
			}
		}
	}
	for _, d := range tup.Checkpoint.Deferred {
		if i, ok := r.g.byName[d]; ok {
			r.deferred = append(r.deferred, i)
		}
	}
	for i := range r.stepLog {
		r.stepLog[i] = r.stepLog[i][:0] // a restored run starts from saved values
	}
	if r.b != nil {
		r.b.dropEncodings()
	}
	return true, nil
}

// logKey is the reserved blob key under which a subgraph run saves the
// writes it made to keys shared with its parent, so that after an interrupt
// or a crash the parent still receives all of them.
const logKey = "__log__"

type wireLogEntry struct {
	Key   string          `json:"key"`
	Write json.RawMessage `json:"write"`
}

// logBlob encodes the shared writes since the last save as the next link of
// the log's chain, for checkpoint id. Its version carries id's tag, as the
// keys' versions do, so two branches of a namespace (a Stateful subgraph
// following a replay) never store different links under one version.
func (r *run) logBlob(id string) (checkpoint.Blob, error) {
	restart := r.x != nil && r.x.logRestart
	if restart {
		// A Stateful subgraph's new invocation: its log starts over, so
		// a resume never hands the parent an earlier invocation's writes.
		r.x.logRestart, r.logAt = false, 0
	}
	entries := make([]wireLogEntry, 0, len(r.log)-r.logAt)
	for _, w := range r.log[r.logAt:] {
		b, err := w.key.self.encodeWrite(w)
		if err != nil {
			return checkpoint.Blob{}, err
		}
		entries = append(entries, wireLogEntry{Key: w.key.name, Write: b})
	}
	data, err := json.Marshal(entries)
	if err != nil {
		return checkpoint.Blob{}, err
	}
	b := checkpoint.Blob{Key: logKey, Version: (r.logVer>>32+1)<<32 | uint64(idTag(id)), Kind: checkpoint.Delta, Base: r.logVer, Data: data}
	if r.logVer == 0 || restart {
		b.Kind, b.Base = checkpoint.Full, 0
	}
	r.logVer, r.logAt = b.Version, len(r.log)
	return b, nil
}

// restoreLog appends one saved link of the log's chain.
func (r *run) restoreLog(b checkpoint.Blob) error {
	var entries []wireLogEntry
	if err := json.Unmarshal(b.Data, &entries); err != nil {
		return fmt.Errorf("subgraph write log version %d: %w", b.Version, err)
	}
	for _, e := range entries {
		i, ok := r.g.sch.byName(e.Key)
		if !ok {
			return fmt.Errorf("subgraph write log names key %q, which this graph's schema lacks", e.Key)
		}
		w, err := r.g.sch.keys[i].decodeWrite(e.Write)
		if err != nil {
			return err
		}
		r.log = append(r.log, w)
	}
	r.logVer, r.logAt = b.Version, len(r.log)
	return nil
}
