package checkpoint

import (
	"bytes"
	"cmp"
	"slices"
)

// memBlobs indexes a namespace's stored blobs: per key, the blobs sorted
// by version. It replaced one map keyed by (key, version): a run's step
// adds the next version of a key, which lands at the end of its list (no
// hashing of the key and version, no rehashing as a thread grows), and a
// chain walks back through one key's list by binary search. A version
// stored out of order (a fork's branch) is inserted in place.
type memBlobs map[string]*blobList

// blobList is one key's blobs, sorted by version, in chunks: head, then
// rest. head starts as first (a key costs one allocation until its third
// version: a wide state writes many keys once or twice) and doubles up to
// blobChunk; later blobs go into chunks of blobChunk. A long list so grows
// without copying what it holds: doubling one slice allocated about twice
// what it kept and copied all of it on the way, some 120 bytes a step
// saved. A chunk may hold more than blobChunk after an insertion (a
// fork's version) or a clone; no chunk in rest is empty. rest is behind
// a pointer, set at the first chunk after the head, so a key of one or two
// blobs costs no more than before chunks (a 144-byte size class).
type blobList struct {
	head   []storedBlob
	more   *[][]storedBlob // the chunks after the head, rest
	first  [2]storedBlob
	keySum uint32 // ChecksumString(0, key): where each blob's checksum starts
}

// rest returns the chunks after the head.
func (l *blobList) rest() [][]storedBlob {
	if l.more == nil {
		return nil
	}
	return *l.more
}

// blobChunk is how many blobs a chunk after the head is made for.
const blobChunk = 32

// storedBlob is a memBlob as a blobList keeps it: without its key, which
// is the list's (48 bytes instead of 72: a step's blob is most of what
// Memory keeps per step after the checkpoint itself).
type storedBlob struct {
	version, base uint64
	data          []byte
	sum           uint32
	kind          BlobKind
}

func (b storedBlob) blob(key string) memBlob {
	return memBlob{Blob: Blob{Key: key, Version: b.version, Kind: b.kind, Base: b.base, Data: b.data}, sum: b.sum}
}

func stored(b memBlob) storedBlob {
	return storedBlob{version: b.Version, base: b.Base, data: b.Data, sum: b.sum, kind: b.Kind}
}

// chunks returns how many chunks l has (the head counts, even empty).
func (l *blobList) chunks() int { return 1 + len(l.rest()) }

// chunk returns chunk c: the head for 0, else rest[c-1].
func (l *blobList) chunk(c int) []storedBlob {
	if c == 0 {
		return l.head
	}
	return (*l.more)[c-1]
}

func (l *blobList) setChunk(c int, s []storedBlob) {
	if c == 0 {
		l.head = s
	} else {
		(*l.more)[c-1] = s
	}
}

// find returns the chunk and position of version v in l, or where it
// would go.
func (l *blobList) find(v uint64) (c, i int, ok bool) {
	last := l.chunk(l.chunks() - 1)
	if n := len(last); n == 0 || last[n-1].version < v {
		return l.chunks() - 1, n, false // the common case: a new version after the others
	}
	// The first chunk whose last version is v or later holds v, if any.
	lo, hi := 0, l.chunks()-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s := l.chunk(mid); len(s) > 0 && s[len(s)-1].version < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	c = lo
	i, ok = slices.BinarySearchFunc(l.chunk(c), v, func(b storedBlob, v uint64) int { return cmp.Compare(b.version, v) })
	return c, i, ok
}

// count returns how many blobs l holds.
func (l *blobList) count() int {
	n := len(l.head)
	for _, s := range l.rest() {
		n += len(s)
	}
	return n
}

// get returns the blob of key at version v.
func (bs memBlobs) get(key string, v uint64) (memBlob, bool) {
	l := bs[key]
	if l == nil {
		return memBlob{}, false
	}
	return l.get(key, v)
}

// get returns the blob at version v of l, key's list.
func (l *blobList) get(key string, v uint64) (memBlob, bool) {
	c, i, ok := l.find(v)
	if !ok {
		return memBlob{}, false
	}
	return l.chunk(c)[i].blob(key), true
}

// set stores b, replacing the blob of its key and version if there is one.
func (bs memBlobs) set(b memBlob) { bs.list(b.Key).set(stored(b)) }

// list returns key's list, adding an empty one if there is none.
func (bs memBlobs) list(key string) *blobList {
	l := bs[key]
	if l == nil {
		l = &blobList{keySum: ChecksumString(0, key)}
		l.head = l.first[:0]
		bs[key] = l
	}
	return l
}

// sum returns BlobChecksum(*b) for a blob of l's key.
func (l *blobList) sum(b *Blob) uint32 {
	return checksumBytes(checksumWords3(l.keySum, b.Version, uint64(b.Kind), b.Base), b.Data)
}

// set stores b, replacing the blob of its version if there is one.
func (l *blobList) set(b storedBlob) {
	c, i, ok := l.find(b.version)
	s := l.chunk(c)
	switch {
	case ok:
		s[i] = b
	case i < len(s):
		l.setChunk(c, slices.Insert(s, i, b))
	case len(s) < cap(s) || c == 0 && cap(s) < blobChunk:
		l.setChunk(c, append(s, b)) // in place, or the head doubling
	default:
		n := make([]storedBlob, 1, blobChunk)
		n[0] = b
		if l.more == nil {
			l.more = new([][]storedBlob)
		}
		*l.more = append(*l.more, n)
	}
}

// count returns how many blobs are stored.
func (bs memBlobs) count() int {
	n := 0
	for _, l := range bs {
		n += l.count()
	}
	return n
}

// keep removes the blobs for which needed is false.
func (bs memBlobs) keep(needed func(key string, v uint64) bool) {
	for key, l := range bs {
		drop := func(b storedBlob) bool { return !needed(key, b.version) }
		l.head = slices.DeleteFunc(l.head, drop)
		if l.more != nil {
			rest := (*l.more)[:0]
			for _, s := range *l.more {
				if s = slices.DeleteFunc(s, drop); len(s) > 0 {
					rest = append(rest, s)
				}
			}
			clear((*l.more)[len(rest):])
			if len(l.head) == 0 && len(rest) > 0 {
				l.head, rest = rest[0], rest[1:]
			}
			*l.more = rest
		}
		if len(l.head) == 0 {
			delete(bs, key)
		}
	}
}

// clone returns a deep copy, each key's blobs in one chunk.
func (bs memBlobs) clone() memBlobs {
	out := make(memBlobs, len(bs))
	for key, l := range bs {
		list := make([]storedBlob, 0, l.count())
		for c := range l.chunks() {
			for _, b := range l.chunk(c) {
				b.data = bytes.Clone(b.data)
				list = append(list, b)
			}
		}
		out[key] = &blobList{head: list, keySum: l.keySum}
	}
	return out
}
