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
	var cv carver
	out := cv.bytes(b)
	cv.release()
	return out
}

// carveString returns b as a string carved from a shared chunk (see
// carveBytes); b may be reused afterwards.
func carveString(b []byte) string {
	var cv carver
	out := cv.string(b)
	cv.release()
	return out
}

// carver carves from one chunk, taken from byteChunks at its first use
// and put back by release: a checkpoint's save carves its ID, its blobs'
// data and its next tasks' IDs with one pool round trip instead of one
// each. The zero carver is ready to use; one carver serves one goroutine.
type carver struct{ c *[]byte }

// bytes is carveBytes from cv's chunk.
func (cv *carver) bytes(b []byte) []byte {
	if len(b) == 0 || len(b) > maxCarvable {
		return bytes.Clone(b)
	}
	if cv.c == nil {
		cv.c = byteChunks.Get().(*[]byte)
	}
	c := cv.c
	if cap(*c)-len(*c) < len(b) {
		*c = make([]byte, 0, byteChunk)
	}
	start := len(*c)
	*c = append(*c, b...)
	return (*c)[start:len(*c):len(*c)]
}

// string is carveString from cv's chunk.
func (cv *carver) string(b []byte) string {
	if len(b) == 0 || len(b) > maxCarvable {
		return string(b)
	}
	out := cv.bytes(b)
	return unsafe.String(&out[0], len(out))
}

// release puts cv's chunk back, if it took one; cv may be used again.
func (cv *carver) release() {
	if cv.c != nil {
		byteChunks.Put(cv.c)
		cv.c = nil
	}
}
