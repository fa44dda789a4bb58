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
// but not the struct (168 bytes instead of 224, most of what Memory keeps
// per step): its blobs live in the namespace, its versions in vers, and
// the join barriers and deferred nodes, which most checkpoints lack, in
// joins.
type memCheckpoint struct {
	id      string
	created time.Time
	next    []Task
	vers    []memVersion // the versions in force, in the order Put saw them
	md      Metadata
	joins   *memJoins             // nil when cp.Waiting and cp.Deferred were both nil
	writes  map[string][]memWrite // task ID -> writes sorted by Index

	// A checkpoint of one key and one next task (a chain's step) keeps
	// them here, not in the namespace's slabs: two carvings and, per 64
	// steps, a dozen slab allocations fewer.
	oneVer  [1]memVersion
	oneTask [1]Task
}

// memJoins holds a stored checkpoint's Waiting and Deferred.
type memJoins struct {
	waiting  map[string][]string
	deferred []string
}

// set fills c from cp (whose Versions and Blobs it ignores), vers and md,
// keeping them as they are.
func (c *memCheckpoint) set(cp Checkpoint, vers []memVersion, md Metadata) {
	*c = memCheckpoint{id: cp.ID, created: cp.Created, next: cp.Next, vers: vers, md: md}
	if cp.Waiting != nil || cp.Deferred != nil {
		c.joins = &memJoins{waiting: cp.Waiting, deferred: cp.Deferred}
	}
}

// checkpoint returns the stored checkpoint without its versions and
// blobs, sharing what c holds.
func (c *memCheckpoint) checkpoint() Checkpoint {
	cp := Checkpoint{ID: c.id, Next: c.next, Created: c.created}
	if c.joins != nil {
		cp.Waiting, cp.Deferred = c.joins.waiting, c.joins.deferred
	}
	return cp
}

// memSlab holds the current slab of each kind a namespace carves from.
type memSlab struct {
	cps   []memCheckpoint
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

	versions, tasks := cp.Versions, cp.Next
	if !owned {
		cp.Waiting, cp.Deferred, md = cloneWaiting(cp.Waiting), slices.Clone(cp.Deferred), cloneMetadata(md)
	}
	cp.Versions, cp.Blobs, cp.Next = nil, nil, nil
	// c is a fresh slab entry, all zero: set only what is not.
	c.id, c.created, c.md = cp.ID, cp.Created, md
	if cp.Waiting != nil || cp.Deferred != nil {
		c.joins = &memJoins{waiting: cp.Waiting, deferred: cp.Deferred}
	}

	nv := len(versions) + len(kvs)
	vers := c.oneVer[:]
	if nv != 1 {
		vers = carve(&ns.slab.vers, nv, nv, held)
	}
	i := copy(vers, kvs)
	for k, v := range versions {
		vers[i] = memVersion{k, v}
		i++
	}
	next := c.oneTask[:]
	if len(tasks) != 1 {
		next = carve(&ns.slab.tasks, len(tasks), len(tasks), held)
	}
	copy(next, tasks)
	if !owned {
		for i := range next {
			next[i].Payload = bytes.Clone(next[i].Payload)
		}
	}
	c.vers, c.next = vers, next
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
			clear(c.vers)
			clear(c.next)
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
	out := make(map[string]uint64, len(c.vers))
	for _, kv := range c.vers {
		out[kv.Key] = kv.Version
	}
	return out
}

// sortedKeys returns the checkpoint's keys in ascending order.
func (c *memCheckpoint) sortedKeys() []string {
	keys := make([]string, len(c.vers))
	for i, kv := range c.vers {
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
