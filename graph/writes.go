package graph

import "sync"

// Writes builds an Update from writes. Writes() with none is an empty,
// non-nil Update: as Invoke's input it starts a new run from START on the
// thread's state, where a nil input resumes the thread instead.
//
// The Update is a copy: it shares no memory with a slice passed as ws, and
// appending to it never writes past its end. Code that already holds its
// writes in a slice it will not reuse can convert it, graph.Update(ws),
// without the copy.
//
// A node returning Writes(k.Set(v)) costs one allocation, the conversion
// of the Update to Output, plus a thirty-second of one: up to four writes
// to keys whose values are small and pointer-free (numbers, bools, small
// structs and arrays of them; see smallValue) are copied into a slab of
// writeSlabLen writes shared by the Writes calls of a processor, so the
// caller's variadic slice stays on its stack. Each part of a slab is handed
// out once and never reused; keeping such an Update keeps its slab
// reachable, which is at most writeSlabLen writes, their keys and their
// small values (a few kilobytes), never a value that holds pointers.
// Other writes are copied into an Update of their own.
func Writes(ws ...Write) Update {
	if len(ws) == 0 {
		return Update{}
	}
	return copyWrites(ws)
}

// copyWrites copies ws (not empty) into an Update of their own: carved from
// a shared slab when they may share one (see Writes), allocated otherwise.
func copyWrites(ws []Write) Update {
	if len(ws) > maxSlabWrites || !slabWrites(ws) {
		u := make(Update, len(ws))
		copy(u, ws)
		return u
	}
	s := writeSlabs.Get().(*writeSlab)
	if s.buf == nil || s.next+len(ws) > writeSlabLen {
		s.buf, s.next = new([writeSlabLen]Write), 0
	}
	// The full slice expression caps the Update at its own writes, so an
	// append to it copies rather than writing into the slab.
	u := s.buf[s.next : s.next+len(ws) : s.next+len(ws)]
	s.next += len(ws) // an int: no write barrier, where a re-slice had one
	writeSlabs.Put(s)
	for i := range u {
		u[i].set(&ws[i])
	}
	return u
}

// set copies w into the slab entry d field by field: each pointer store
// takes a buffered write barrier while the GC marks. A struct copy of a
// Write over 32 bytes (it was 40, see keyRef) became a typedmemmove, whose
// barrier takes the runtime's slower bulk path.
func (d *Write) set(w *Write) {
	d.key, d.op, d.small, d.val = w.key, w.op, w.small, w.val
}

// writeSlabLen is how many writes one slab holds; maxSlabWrites is the
// most one Update carves from it.
const (
	writeSlabLen  = 32
	maxSlabWrites = 4
)

// writeSlab is a slab of writes and how much of it was handed out. Each part
// is handed out once and never reused, so an Update made by Writes is its
// holder's alone, like any other. A pooled writeSlab is used by one
// goroutine at a time (between Get and Put); a slab the pool drops at a
// GC is only the unused remainder of one.
type writeSlab struct {
	buf  *[writeSlabLen]Write
	next int // buf[:next] is handed out
}

var writeSlabs = sync.Pool{New: func() any { return new(writeSlab) }}

// slabWrites reports whether every write in ws may share a slab: a set or
// overwrite of a key whose values are small and pointer-free (Write.small).
// A zero Write is not (Writes keeps it, and the engine reports it).
func slabWrites(ws []Write) bool {
	for _, w := range ws {
		if !w.small {
			return false
		}
	}
	return true
}
