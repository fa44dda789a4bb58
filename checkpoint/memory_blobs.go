package checkpoint

import (
	"bytes"
	"cmp"
	"hash/crc32"
	"slices"
)

// memBlobs indexes a namespace's stored blobs: per key, the blobs sorted
// by version. It replaced one map keyed by (key, version): a run's step
// adds the next version of a key, which lands at the end of its list (no
// hashing of the key and version, no rehashing as a thread grows), and a
// chain walks back through one key's list by binary search. A version
// stored out of order (a fork's branch) is inserted in place.
type memBlobs map[string]*blobList

// blobList is one key's blobs. Its first two live in the struct, so a key
// costs one allocation until its third version (a wide state writes many
// keys once or twice).
type blobList struct {
	list   []storedBlob
	first  [2]storedBlob
	keySum uint32 // ChecksumString(0, key): where each blob's checksum starts
}

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

// find returns the position of version v in l, or where it would go.
func (l *blobList) find(v uint64) (int, bool) {
	if n := len(l.list); n > 0 && l.list[n-1].version < v {
		return n, false // the common case: a new version after the others
	}
	return slices.BinarySearchFunc(l.list, v, func(b storedBlob, v uint64) int { return cmp.Compare(b.version, v) })
}

// get returns the blob of key at version v.
func (bs memBlobs) get(key string, v uint64) (memBlob, bool) {
	l := bs[key]
	if l == nil {
		return memBlob{}, false
	}
	i, ok := l.find(v)
	if !ok {
		return memBlob{}, false
	}
	return l.list[i].blob(key), true
}

// set stores b, replacing the blob of its key and version if there is one.
func (bs memBlobs) set(b memBlob) { bs.list(b.Key).set(stored(b)) }

// list returns key's list, adding an empty one if there is none.
func (bs memBlobs) list(key string) *blobList {
	l := bs[key]
	if l == nil {
		l = &blobList{keySum: ChecksumString(0, key)}
		l.list = l.first[:0]
		bs[key] = l
	}
	return l
}

// sum returns BlobChecksum(b) for a blob of l's key.
func (l *blobList) sum(b Blob) uint32 {
	return crc32.Update(ChecksumUint64(l.keySum, b.Version, uint64(b.Kind), b.Base), castagnoli, b.Data)
}

// set stores b, replacing the blob of its version if there is one.
func (l *blobList) set(b storedBlob) {
	i, ok := l.find(b.version)
	switch {
	case ok:
		l.list[i] = b
	case i == len(l.list):
		l.list = append(l.list, b)
	default:
		l.list = slices.Insert(l.list, i, b)
	}
}

// count returns how many blobs are stored.
func (bs memBlobs) count() int {
	n := 0
	for _, l := range bs {
		n += len(l.list)
	}
	return n
}

// keep removes the blobs for which needed is false.
func (bs memBlobs) keep(needed func(key string, v uint64) bool) {
	for key, l := range bs {
		l.list = slices.DeleteFunc(l.list, func(b storedBlob) bool { return !needed(key, b.version) })
		if len(l.list) == 0 {
			delete(bs, key)
		}
	}
}

// clone returns a deep copy.
func (bs memBlobs) clone() memBlobs {
	out := make(memBlobs, len(bs))
	for key, l := range bs {
		list := make([]storedBlob, len(l.list))
		for i, b := range l.list {
			b.data = bytes.Clone(b.data)
			list[i] = b
		}
		out[key] = &blobList{list: list, keySum: l.keySum}
	}
	return out
}
