package graph

import (
	"bytes"
	"sync"
	"unsafe"
)

// Checkpoint IDs, task IDs and small blob data are copied into shared
// chunks of bytes instead of each getting an allocation of its own (two
// or three per saved step). A chunk is only ever appended to: the bytes
// handed out are never written again, so a string made of them with
// unsafe.String is as immutable as any, and a []byte is capped at its
// length, so an append to it copies. A chunk is freed when nothing handed
// out of it is referenced any more; a long-lived value can so keep up to
// byteChunk bytes of others' alive, which bounds the cost at a few times
// the small values kept, nothing for the large ones (never carved).
const (
	byteChunk   = 1024 // bytes per chunk
	maxCarvable = 128  // longer values get an allocation of their own
)

// byteChunks hands a goroutine a chunk to append to; chunks are per P in
// effect, so concurrent runs do not contend.
var byteChunks = sync.Pool{New: func() any { return new([]byte) }}

// carveBytes returns a copy of b that no one else uses, capped at its
// length, carved from a shared chunk when it is small.
func carveBytes(b []byte) []byte {
	if len(b) == 0 || len(b) > maxCarvable {
		return bytes.Clone(b)
	}
	c := byteChunks.Get().(*[]byte)
	if cap(*c)-len(*c) < len(b) {
		*c = make([]byte, 0, byteChunk)
	}
	start := len(*c)
	*c = append(*c, b...)
	out := (*c)[start:len(*c):len(*c)]
	byteChunks.Put(c)
	return out
}

// carveString returns b as a string carved from a shared chunk (see
// carveBytes); b may be reused afterwards.
func carveString(b []byte) string {
	if len(b) == 0 || len(b) > maxCarvable {
		return string(b)
	}
	out := carveBytes(b)
	return unsafe.String(&out[0], len(out))
}
