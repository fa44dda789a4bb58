package checkpoint

import (
	"bytes"
	"slices"
	"strings"
	"time"
)

// How Memory lays out what it stores. A graph run saves a checkpoint per
// step, and each used to cost Memory three allocations of its own (the
// stored checkpoint, and the versions map and task list the caller built,
// kept or copied) plus a map that the garbage collector walked for ever
// after. Put now copies the versions and the tasks, element by element,
// into slabs owned by the namespace, and carves the stored checkpoint from
// a slab too: a step costs a fraction of an allocation, the caller may
// reuse its map and slices, and the stored versions are a flat slice.
//
// Slabs double from a few entries up to slabMax checkpoints' worth, so a
// namespace of three checkpoints (a plan step's nested run) does not hold
// a slab sized for a thousand. A slab is never written twice: removing a
// checkpoint clears its entries (so what they referenced can be
// collected) and leaves the space unused until every checkpoint carved
// from that slab is gone.

// slabMax is the most checkpoints one slab is sized for.
const slabMax = 32

// memVersion is one entry of a stored checkpoint's versions.
type memVersion = KeyVersion

// memCheckpoint is a stored checkpoint. It keeps a Checkpoint's fields
// and its Metadata's but not the structs (168 bytes with its one version
// and task, most of what Memory keeps per step): its blobs live in the
// namespace. One version (with a key) is kept inline, in oneVer, and so is
// one next task (with a node and no payload), in oneTask, with no slice
// pointing at them: a chain's step carves nothing from slabs, and the
// collector walks fewer bytes and pointers. The source is a byte when it
// is one of the engine's. What most checkpoints lack — other versions or
// tasks, a task's payload, join barriers, deferred nodes, another source,
// Metadata.Extra, pending writes — is kept in more, carved from a slab of
// the namespace (or allocated when pending writes come later).
type memCheckpoint struct {
	id      string
	created time.Time
	parent  string        // Metadata.Parent
	runID   string        // Metadata.RunID
	step    int           // Metadata.Step
	more    *memMore      // nil when everything fits inline
	oneVer  [1]memVersion // the version unless more.vers is not nil; none if its key is empty
	oneTask memTask       // the task unless more.next is not nil; none if its node is empty
	source  uint8         // Metadata.Source: its index in memSources, 0 for more.rare's
}

// memTask is a next task kept inline: one without a payload.
type memTask struct{ id, node, path string }

// memSources are the sources a stored checkpoint keeps as a byte, its
// index here; 0 stands for the source kept in memRare ("" without one).
var memSources = [...]Source{"", SourceInput, SourceLoop, SourceUpdate, SourceFork, SourceResume}

// sourceCode returns s's index in memSources, 0 when it has none.
func sourceCode(s Source) uint8 {
	for i, k := range memSources[1:] {
		if s == k {
			return uint8(i + 1)
		}
	}
	return 0
}

// memMore holds what a checkpoint does not keep inline.
type memMore struct {
	vers []memVersion // the versions in force, in the order Put saw them; nil if inline
	next []Task       // nil if inline
	rare *memRare     // nil when the checkpoint has none of it
}

// memRare holds what few stored checkpoints have.
type memRare struct {
	waiting  map[string][]string
	deferred []string
	source   Source                // Metadata.Source when not in memSources
	extra    map[string]string     // Metadata.Extra
	writes   map[string][]memWrite // task ID -> writes sorted by Index
}

// versInline reports whether versions vers are kept inline.
func versInline(vers []memVersion) bool {
	return len(vers) == 0 || len(vers) == 1 && vers[0].Key != ""
}

// tasksInline reports whether next tasks next are kept inline.
func tasksInline(next []Task) bool {
	return len(next) == 0 || len(next) == 1 && next[0].Node != "" && next[0].Payload == nil
}

// rareOf returns the rare part of a checkpoint's join barriers (waiting),
// deferred nodes and metadata md, nil when they hold none of it; code is
// md.Source's sourceCode.
func rareOf(waiting map[string][]string, deferred []string, md *Metadata, code uint8) *memRare {
	if waiting == nil && deferred == nil && md.Extra == nil && (code != 0 || md.Source == "") {
		return nil
	}
	r := &memRare{waiting: waiting, deferred: deferred, extra: md.Extra}
	if code == 0 {
		r.source = md.Source
	}
	return r
}

// set fills c from cp (whose Versions and Blobs it ignores), vers and md,
// keeping them as they are (or copying them inline). It drops pending
// writes.
func (c *memCheckpoint) set(cp Checkpoint, vers []memVersion, md Metadata) {
	code := sourceCode(md.Source)
	*c = memCheckpoint{id: cp.ID, created: cp.Created, parent: md.Parent, runID: md.RunID, step: md.Step, source: code}
	var more memMore
	if versInline(vers) {
		if len(vers) == 1 {
			c.oneVer[0] = vers[0]
		}
	} else {
		more.vers = vers
	}
	if tasksInline(cp.Next) {
		if len(cp.Next) == 1 {
			t := cp.Next[0]
			c.oneTask = memTask{t.ID, t.Node, t.Path}
		}
	} else {
		more.next = cp.Next
	}
	more.rare = rareOf(cp.Waiting, cp.Deferred, &md, code)
	if more.vers != nil || more.next != nil || more.rare != nil {
		c.more = &more
	}
}

// rare returns the checkpoint's rare part, nil when it has none.
func (c *memCheckpoint) rare() *memRare {
	if c.more == nil {
		return nil
	}
	return c.more.rare
}

// writes returns the checkpoint's pending writes, by task ID (nil when it
// has none).
func (c *memCheckpoint) writes() map[string][]memWrite {
	if r := c.rare(); r != nil {
		return r.writes
	}
	return nil
}

// writesFor returns the checkpoint's map of pending writes to add to,
// making it (and the parts holding it) when there is none.
func (c *memCheckpoint) writesFor() map[string][]memWrite {
	if c.more == nil {
		c.more = &memMore{}
	}
	if c.more.rare == nil {
		c.more.rare = &memRare{}
	}
	if c.more.rare.writes == nil {
		c.more.rare.writes = make(map[string][]memWrite)
	}
	return c.more.rare.writes
}

// setWrites replaces the checkpoint's pending writes with ws.
func (c *memCheckpoint) setWrites(ws map[string][]memWrite) {
	if ws == nil && c.rare() == nil {
		return
	}
	c.writesFor()
	c.more.rare.writes = ws
}

// metadata returns the stored checkpoint's metadata, sharing its Extra.
func (c *memCheckpoint) metadata() Metadata {
	md := Metadata{Source: memSources[c.source], Step: c.step, Parent: c.parent, RunID: c.runID}
	if r := c.rare(); r != nil {
		md.Extra = r.extra
		if c.source == 0 {
			md.Source = r.source
		}
	}
	return md
}

// versList returns the checkpoint's versions, sharing what c holds.
func (c *memCheckpoint) versList() []memVersion {
	switch {
	case c.more != nil && c.more.vers != nil:
		return c.more.vers
	case c.oneVer[0].Key != "":
		return c.oneVer[:]
	}
	return nil
}

// tasks returns the checkpoint's next tasks, sharing what c holds but
// for an inline task's slice.
func (c *memCheckpoint) tasks() []Task {
	switch {
	case c.more != nil && c.more.next != nil:
		return c.more.next
	case c.oneTask.node != "":
		return []Task{{ID: c.oneTask.id, Node: c.oneTask.node, Path: c.oneTask.path}}
	}
	return nil
}

// checkpoint returns the stored checkpoint without its versions and
// blobs, sharing what c holds.
func (c *memCheckpoint) checkpoint() Checkpoint {
	cp := Checkpoint{ID: c.id, Next: c.tasks(), Created: c.created}
	if r := c.rare(); r != nil {
		cp.Waiting, cp.Deferred = r.waiting, r.deferred
	}
	return cp
}

// memSlab holds the current slab of each kind a namespace carves from.
type memSlab struct {
	cps   []memCheckpoint
	more  []memMore
	vers  []memVersion
	tasks []Task
}

// slabSize is how many checkpoints the next slab of a namespace holding n
// checkpoints is sized for: as many again, from 2 to slabMax.
func slabSize(n int) int { return min(slabMax, max(2, n)) }

// carve returns n fresh entries of *slab, starting a new slab of at least
// per*slabSize(stored) entries when the current one has no room. The
// result has no spare capacity, so an append to it never writes into the
// slab.
func carve[T any](slab *[]T, n, per, stored int) []T {
	if n == 0 {
		return nil
	}
	s := *slab
	if cap(s)-len(s) < n {
		s = make([]T, 0, max(n, per*slabSize(stored)))
	}
	out := s[len(s) : len(s)+n : len(s)+n]
	*slab = s[:len(s)+n]
	return out
}

// store adds cp (already checked by put) as the namespace's latest
// checkpoint; first, if not nil, is the stored list of its first blob's
// key. Unless owned, it copies every byte slice and map it keeps;
// either way it copies cp.Versions, cp.Blobs and cp.Next element by
// element, so the caller keeps those containers.
func (ns *memNamespace) store(cp *Checkpoint, kvs []KeyVersion, md *Metadata, owned bool, first *blobList) {
	for i := range cp.Blobs {
		b := &cp.Blobs[i] // (a Blob is 64 bytes: not copied)
		l := first
		if i > 0 || l == nil {
			if l = ns.listFor(b.Key); l == nil {
				l = ns.blobs.list(b.Key)
			}
		}
		data := b.Data
		if !owned {
			data = bytes.Clone(data)
		}
		l.set(storedBlob{version: b.Version, base: b.Base, data: data, sum: l.sum(b), kind: b.Kind})
	}
	held := len(ns.cps)
	if len(ns.slab.cps) == cap(ns.slab.cps) {
		ns.slab.cps = make([]memCheckpoint, 0, slabSize(held))
	}
	ns.slab.cps = ns.slab.cps[:len(ns.slab.cps)+1]
	c := &ns.slab.cps[len(ns.slab.cps)-1]

	waiting, deferred := cp.Waiting, cp.Deferred
	if !owned {
		waiting, deferred = cloneWaiting(waiting), slices.Clone(deferred)
		cmd := cloneMetadata(*md)
		md = &cmd // md is the caller's: not written to
	}
	// c is a fresh slab entry, all zero: set only what is not.
	code := sourceCode(md.Source)
	c.id, c.created, c.parent, c.runID, c.step, c.source = cp.ID, cp.Created, md.Parent, md.RunID, md.Step, code

	var more memMore
	nv := len(cp.Versions) + len(kvs)
	switch {
	case nv == 1 && len(kvs) == 1 && kvs[0].Key != "":
		c.oneVer[0] = kvs[0]
	case nv == 0:
	default:
		var one [1]memVersion
		if nv == 1 {
			fillVersions(one[:], kvs, cp.Versions)
		}
		if nv == 1 && one[0].Key != "" {
			c.oneVer[0] = one[0]
		} else {
			more.vers = carve(&ns.slab.vers, nv, nv, held)
			fillVersions(more.vers, kvs, cp.Versions)
		}
	}
	if tasksInline(cp.Next) {
		if len(cp.Next) == 1 {
			t := &cp.Next[0]
			c.oneTask = memTask{t.ID, t.Node, t.Path}
		}
	} else {
		next := carve(&ns.slab.tasks, len(cp.Next), len(cp.Next), held)
		copy(next, cp.Next)
		if !owned {
			for i := range next {
				next[i].Payload = bytes.Clone(next[i].Payload)
			}
		}
		more.next = next
	}
	more.rare = rareOf(waiting, deferred, md, code)
	if more.vers != nil || more.next != nil || more.rare != nil {
		c.more = &carve(&ns.slab.more, 1, 1, held)[0]
		*c.more = more
	}
	ns.cps = append(ns.cps, c)
}

// get returns the stored checkpoint whose ID is id, nil when there is
// none. The checkpoints are sorted by ID, so it searches them; most calls
// name the latest, the last.
func (ns *memNamespace) get(id string) *memCheckpoint {
	if ns == nil || len(ns.cps) == 0 {
		return nil
	}
	if c := ns.cps[len(ns.cps)-1]; c.id == id {
		return c
	}
	if i, ok := ns.search(id); ok {
		return ns.cps[i]
	}
	return nil
}

// search returns the position of the checkpoint whose ID is id, or where
// it would go.
func (ns *memNamespace) search(id string) (int, bool) {
	return slices.BinarySearchFunc(ns.cps, id, func(c *memCheckpoint, id string) int { return strings.Compare(c.id, id) })
}

// remove removes the checkpoints for which drop (given the position and
// the checkpoint) is true, clearing what they held in the slabs, and
// returns how many it removed. Removing is rare: the index is rebuilt.
func (ns *memNamespace) remove(drop func(i int, c *memCheckpoint) bool) int {
	cps := make([]*memCheckpoint, 0, len(ns.cps))
	for i, c := range ns.cps {
		if drop(i, c) {
			if c.more != nil {
				clear(c.more.vers)
				clear(c.more.next)
				*c.more = memMore{}
			}
			*c = memCheckpoint{}
			continue
		}
		cps = append(cps, c)
	}
	removed := len(ns.cps) - len(cps)
	if removed > 0 {
		ns.cps = cps
	}
	return removed
}

// versions returns a new map of the checkpoint's versions.
func (c *memCheckpoint) versions() map[string]uint64 {
	vers := c.versList()
	out := make(map[string]uint64, len(vers))
	for _, kv := range vers {
		out[kv.Key] = kv.Version
	}
	return out
}

// sortedKeys returns the checkpoint's keys in ascending order.
func (c *memCheckpoint) sortedKeys() []string {
	vers := c.versList()
	keys := make([]string, len(vers))
	for i, kv := range vers {
		keys[i] = kv.Key
	}
	slices.SortFunc(keys, strings.Compare)
	return keys
}

func cloneWaiting(w map[string][]string) map[string][]string {
	if w == nil {
		return nil
	}
	out := make(map[string][]string, len(w))
	for k, v := range w {
		out[k] = slices.Clone(v)
	}
	return out
}

// fillVersions fills vers with kvs and then the entries of m.
func fillVersions(vers, kvs []memVersion, m map[string]uint64) {
	i := copy(vers, kvs)
	for k, v := range m {
		vers[i] = memVersion{k, v}
		i++
	}
}
