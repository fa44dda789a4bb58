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
// what Memory keeps per step): its blobs live in the namespace. A
// checkpoint of at most one version and one next task and no join
// barriers or deferred nodes (a chain's step) keeps them inline, in
// oneVer and oneTask, with no slice pointing at them: no carving from
// slabs, and fewer bytes and pointers for the collector to walk. Any other
// keeps them in more, carved from a slab of the namespace.
type memCheckpoint struct {
	id      string
	created time.Time
	md      Metadata
	more    *memMore              // nil when the checkpoint fits inline
	writes  map[string][]memWrite // task ID -> writes sorted by Index
	oneVer  [1]memVersion         // with more nil: the version, if its key is not empty
	oneTask [1]Task               // with more nil: the next task, if its node is not empty
}

// memMore holds what a checkpoint that does not fit inline stores.
type memMore struct {
	vers     []memVersion // the versions in force, in the order Put saw them
	next     []Task
	waiting  map[string][]string
	deferred []string
}

// fitsInline reports whether a checkpoint with versions vers, next tasks
// next and cp's Waiting and Deferred is stored inline.
func fitsInline(vers []memVersion, next []Task, cp Checkpoint) bool {
	return len(vers) <= 1 && len(next) <= 1 && cp.Waiting == nil && cp.Deferred == nil &&
		(len(vers) == 0 || vers[0].Key != "") && (len(next) == 0 || next[0].Node != "")
}

// set fills c from cp (whose Versions and Blobs it ignores), vers and md,
// keeping them as they are (or copying them inline).
func (c *memCheckpoint) set(cp Checkpoint, vers []memVersion, md Metadata) {
	*c = memCheckpoint{id: cp.ID, created: cp.Created, md: md}
	if fitsInline(vers, cp.Next, cp) {
		copy(c.oneVer[:], vers)
		copy(c.oneTask[:], cp.Next)
		return
	}
	c.more = &memMore{vers: vers, next: cp.Next, waiting: cp.Waiting, deferred: cp.Deferred}
}

// versList returns the checkpoint's versions, sharing what c holds.
func (c *memCheckpoint) versList() []memVersion {
	switch {
	case c.more != nil:
		return c.more.vers
	case c.oneVer[0].Key != "":
		return c.oneVer[:]
	}
	return nil
}

// tasks returns the checkpoint's next tasks, sharing what c holds.
func (c *memCheckpoint) tasks() []Task {
	switch {
	case c.more != nil:
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
	if c.more != nil {
		cp.Waiting, cp.Deferred = c.more.waiting, c.more.deferred
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

	nv := len(cp.Versions) + len(kvs)
	var vers []memVersion
	var next []Task
	inline := false
	if nv <= 1 && len(cp.Next) <= 1 {
		vers, next = c.oneVer[:nv], c.oneTask[:len(cp.Next)]
		fillVersions(vers, kvs, cp.Versions)
		copy(next, cp.Next)
		if inline = fitsInline(vers, next, cp); !inline {
			clear(c.oneVer[:])
			clear(c.oneTask[:])
		}
	}
	if !inline {
		c.more = &carve(&ns.slab.more, 1, 1, held)[0]
		vers = carve(&ns.slab.vers, nv, nv, held)
		fillVersions(vers, kvs, cp.Versions)
		next = carve(&ns.slab.tasks, len(cp.Next), len(cp.Next), held)
		copy(next, cp.Next)
		*c.more = memMore{vers: vers, next: next, waiting: cp.Waiting, deferred: cp.Deferred}
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
