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
// but not the struct (216 bytes with its one version and task, most of
// what Memory keeps per step): its blobs live in the namespace. One
// version (with a key) is kept inline, in oneVer, and so is one next task
// (with a node), in oneTask, with no slice pointing at them: a chain's
// step carves nothing from slabs, and the collector walks fewer bytes and
// pointers. Other versions or tasks, and the join barriers and deferred
// nodes, which most checkpoints lack, are kept in more, carved from a
// slab of the namespace.
type memCheckpoint struct {
	id      string
	created time.Time
	md      Metadata
	more    *memMore              // nil when everything fits inline
	writes  map[string][]memWrite // task ID -> writes sorted by Index
	oneVer  [1]memVersion         // the version unless more.vers is not nil; none if its key is empty
	oneTask [1]Task               // the task unless more.next is not nil; none if its node is empty
}

// memMore holds what a checkpoint does not keep inline.
type memMore struct {
	vers  []memVersion // the versions in force, in the order Put saw them; nil if inline
	next  []Task       // nil if inline
	joins *memJoins    // nil when cp.Waiting and cp.Deferred were both nil
}

// memJoins holds a stored checkpoint's Waiting and Deferred.
type memJoins struct {
	waiting  map[string][]string
	deferred []string
}

// versInline reports whether versions vers are kept inline.
func versInline(vers []memVersion) bool {
	return len(vers) == 0 || len(vers) == 1 && vers[0].Key != ""
}

// tasksInline reports whether next tasks next are kept inline.
func tasksInline(next []Task) bool {
	return len(next) == 0 || len(next) == 1 && next[0].Node != ""
}

// set fills c from cp (whose Versions and Blobs it ignores), vers and md,
// keeping them as they are (or copying them inline).
func (c *memCheckpoint) set(cp Checkpoint, vers []memVersion, md Metadata) {
	*c = memCheckpoint{id: cp.ID, created: cp.Created, md: md}
	var more memMore
	if versInline(vers) {
		copy(c.oneVer[:], vers)
	} else {
		more.vers = vers
	}
	if tasksInline(cp.Next) {
		copy(c.oneTask[:], cp.Next)
	} else {
		more.next = cp.Next
	}
	if cp.Waiting != nil || cp.Deferred != nil {
		more.joins = &memJoins{waiting: cp.Waiting, deferred: cp.Deferred}
	}
	if more.vers != nil || more.next != nil || more.joins != nil {
		c.more = &more
	}
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

// tasks returns the checkpoint's next tasks, sharing what c holds.
func (c *memCheckpoint) tasks() []Task {
	switch {
	case c.more != nil && c.more.next != nil:
		return c.more.next
	case c.oneTask[0].Node != "":
		return c.oneTask[:]
	}
	return nil
}

// checkpoint returns the stored checkpoint without its versions and
// blobs, sharing what c holds.
func (c *memCheckpoint) checkpoint() Checkpoint {
	cp := Checkpoint{ID: c.id, Next: c.tasks(), Created: c.created}
	if c.more != nil && c.more.joins != nil {
		cp.Waiting, cp.Deferred = c.more.joins.waiting, c.more.joins.deferred
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
// checkpoint. Unless owned, it copies every byte slice and map it keeps;
// either way it copies cp.Versions, cp.Blobs and cp.Next element by
// element, so the caller keeps those containers.
func (ns *memNamespace) store(cp Checkpoint, kvs []KeyVersion, md Metadata, owned bool) {
	for _, b := range cp.Blobs {
		l := ns.blobs.list(b.Key)
		sum := l.sum(b)
		if !owned {
			b = cloneBlob(b)
		}
		l.set(stored(memBlob{Blob: b, sum: sum}))
	}
	held := len(ns.cps)
	if len(ns.slab.cps) == cap(ns.slab.cps) {
		ns.slab.cps = make([]memCheckpoint, 0, slabSize(held))
	}
	ns.slab.cps = ns.slab.cps[:len(ns.slab.cps)+1]
	c := &ns.slab.cps[len(ns.slab.cps)-1]

	if !owned {
		cp.Waiting, cp.Deferred, md = cloneWaiting(cp.Waiting), slices.Clone(cp.Deferred), cloneMetadata(md)
	}
	// c is a fresh slab entry, all zero: set only what is not.
	c.id, c.created, c.md = cp.ID, cp.Created, md

	var more memMore
	nv := len(cp.Versions) + len(kvs)
	if nv <= 1 {
		fillVersions(c.oneVer[:nv], kvs, cp.Versions)
	}
	if nv > 1 || !versInline(c.oneVer[:nv]) {
		clear(c.oneVer[:])
		more.vers = carve(&ns.slab.vers, nv, nv, held)
		fillVersions(more.vers, kvs, cp.Versions)
	}
	var next []Task
	if tasksInline(cp.Next) {
		next = c.oneTask[:len(cp.Next)]
	} else {
		next = carve(&ns.slab.tasks, len(cp.Next), len(cp.Next), held)
		more.next = next
	}
	copy(next, cp.Next)
	if cp.Waiting != nil || cp.Deferred != nil {
		more.joins = &memJoins{waiting: cp.Waiting, deferred: cp.Deferred}
	}
	if more.vers != nil || more.next != nil || more.joins != nil {
		c.more = &carve(&ns.slab.more, 1, 1, held)[0]
		*c.more = more
	}
	if !owned {
		for i := range next {
			next[i].Payload = bytes.Clone(next[i].Payload)
		}
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
