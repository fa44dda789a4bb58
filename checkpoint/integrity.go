package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"unsafe"
)

// ErrCorrupt means a stored checkpoint, blob or pending write was damaged
// after it was written: its checksum does not match, it does not decode, or
// it decodes to something no Put could have stored (a checkpoint without its
// ID, a blob chain with a hole). Backends wrap it with the thread, namespace
// and checkpoint (and the key or task) concerned. The data cannot be trusted;
// restore the thread from a backup, or delete it.
var ErrCorrupt = errors.New("checkpoint: stored data is corrupt")

// ErrTooLarge means a checkpoint row, blob, pending write or store value is
// larger than the backend's size limit, on Put or when read back. The error
// names the limit; raise it with the backend's option if the data is
// legitimately that large.
var ErrTooLarge = errors.New("checkpoint: value exceeds the size limit")

// DefaultMaxBytes is the size limit every Saver applies unless configured
// otherwise: the most bytes of one encoded checkpoint row (checkpoint and
// metadata, without its blobs), of one blob's data, and of one pending
// write's value, accepted on Put and on read.
const DefaultMaxBytes = 64 << 20

// castagnoli is the CRC-32C table; the CPU computes it in hardware on amd64
// and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of the concatenation of parts, continuing
// from sum (0 to start). Backends store it beside each checkpoint row, blob
// and pending write and compare it on read; see ErrCorrupt. The parts are
// handed to hash/crc32, so a caller's stack buffer passed here moves to the
// heap; small fixed fields are cheaper through ChecksumString.
func Checksum(sum uint32, parts ...[]byte) uint32 {
	for _, p := range parts {
		sum = crc32.Update(sum, castagnoli, p)
	}
	return sum
}

// ChecksumString is Checksum for strings, without copying or allocating.
func ChecksumString(sum uint32, parts ...string) uint32 {
	for _, s := range parts {
		if len(s) > 8 {
			// hash/crc32 only reads the bytes, with the CPU's CRC-32C
			// instruction where there is one: a task ID's 36 bytes take a
			// quarter of the table loop's time. The loop is left for the
			// separators and short keys, where the call costs more.
			sum = crc32.Update(sum, castagnoli, unsafe.Slice(unsafe.StringData(s), len(s)))
			continue
		}
		sum = ^sum
		for i := 0; i < len(s); i++ {
			sum = castagnoli[byte(sum)^s[i]] ^ (sum >> 8)
		}
		sum = ^sum
	}
	return sum
}

// checksumUint64 continues sum over v's 8 little-endian bytes.
// It takes the eight bytes at once (slicing-by-8, as hash/crc32 does for
// long inputs): byte by byte, the three words of each blob's checksum were
// 24 dependent table lookups, a few percent of a step saved in memory.
func checksumUint64(sum uint32, v uint64) uint32 {
	t := &castagnoli8
	crc := ^sum ^ uint32(v)
	hi := uint32(v >> 32)
	crc = t[0][hi>>24] ^ t[1][hi>>16&0xff] ^ t[2][hi>>8&0xff] ^ t[3][hi&0xff] ^
		t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
	return ^crc
}

// checksumWords3 is ChecksumUint64(sum, a, b, c) in one call: a blob's
// version, kind and base, which Memory's Put checksums at every step.
func checksumWords3(sum uint32, a, b, c uint64) uint32 {
	// checksumUint64 three times, unrolled; between two words the
	// complements cancel.
	t := &castagnoli8
	crc := ^sum ^ uint32(a)
	hi := uint32(a >> 32)
	crc = t[0][hi>>24] ^ t[1][hi>>16&0xff] ^ t[2][hi>>8&0xff] ^ t[3][hi&0xff] ^
		t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
	crc ^= uint32(b)
	hi = uint32(b >> 32)
	crc = t[0][hi>>24] ^ t[1][hi>>16&0xff] ^ t[2][hi>>8&0xff] ^ t[3][hi&0xff] ^
		t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
	crc ^= uint32(c)
	hi = uint32(c >> 32)
	crc = t[0][hi>>24] ^ t[1][hi>>16&0xff] ^ t[2][hi>>8&0xff] ^ t[3][hi&0xff] ^
		t[4][crc>>24] ^ t[5][crc>>16&0xff] ^ t[6][crc>>8&0xff] ^ t[7][crc&0xff]
	return ^crc
}

// smallChecksum is the longest data checksumBytes checksums itself.
const smallChecksum = 16

// checksumBytes is crc32.Update(sum, castagnoli, p): data of a few bytes
// (a step's counter or flag) by table, eight bytes at a time and then byte
// by byte, where the call into hash/crc32's hardware path cost more than
// the bytes; longer data by hash/crc32.
func checksumBytes(sum uint32, p []byte) uint32 {
	if len(p) > smallChecksum {
		return crc32.Update(sum, castagnoli, p)
	}
	for len(p) >= 8 {
		sum = checksumUint64(sum, binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	sum = ^sum
	for _, c := range p {
		sum = castagnoli[byte(sum)^c] ^ (sum >> 8)
	}
	return ^sum
}

// castagnoli8 is the CRC-32C table for slicing-by-8: castagnoli8[0] is
// castagnoli, and castagnoli8[j][i] is the CRC of byte i followed by j
// zero bytes.
var castagnoli8 = func() (t [8][256]uint32) {
	t[0] = *castagnoli
	for i := range 256 {
		crc := t[0][i]
		for j := 1; j < 8; j++ {
			crc = t[0][crc&0xff] ^ crc>>8
			t[j][i] = crc
		}
	}
	return t
}()

// ChecksumUint64 continues sum over the 8 little-endian bytes of each of
// vs, without allocating.
func ChecksumUint64(sum uint32, vs ...uint64) uint32 {
	for _, v := range vs {
		sum = checksumUint64(sum, v)
	}
	return sum
}

// Corruptf returns an error wrapping ErrCorrupt that names ref and says
// what is wrong, formatted like fmt.Sprintf.
func Corruptf(ref Ref, format string, args ...any) error {
	return fmt.Errorf("checkpoint: %s: %s: %w", ref, fmt.Sprintf(format, args...), ErrCorrupt)
}

// CheckSize returns an error wrapping ErrTooLarge when n bytes exceed limit
// (a limit of 0 or less means DefaultMaxBytes). what names the value, e.g.
// `blob "messages" version 3`; op is "put" or "read".
func CheckSize(ref Ref, op, what string, n, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if n <= limit {
		return nil
	}
	return fmt.Errorf("checkpoint: %s %s: %s has %d bytes, more than the limit of %d bytes: %w", op, ref, what, n, limit, ErrTooLarge)
}

// Validate checks that a Tuple read from storage is one a Saver could have
// stored, and returns an error wrapping ErrCorrupt naming the first problem
// otherwise. Every Saver calls it on each Tuple it returns, so damage that
// survives decoding (a checkpoint row replaced by "{}" or "null", a
// hand-edited chain) is an error, never a silently different state:
//
//   - the Ref names a thread and a checkpoint, and the checkpoint's own ID
//     is that checkpoint's;
//   - Metadata.Parent is not the checkpoint itself;
//   - every key of Versions is non-empty, and Blobs holds, for each key in
//     sorted order, a chain that starts with a Full blob, continues with
//     Delta blobs each based on the previous version, and ends at the
//     version in force; no blob belongs to a key without a version;
//   - every pending write names a task, and the writes are sorted by task
//     and then index without repeats.
func (t *Tuple) Validate() error {
	if t == nil {
		return fmt.Errorf("checkpoint: nil tuple: %w", ErrCorrupt)
	}
	ref := t.Ref
	if ref.ThreadID == "" || ref.ID == "" {
		return Corruptf(ref, "the tuple names no thread or no checkpoint")
	}
	if t.Checkpoint.ID != ref.ID {
		return Corruptf(ref, "the stored checkpoint names ID %q", t.Checkpoint.ID)
	}
	if t.Metadata.Parent == ref.ID {
		return Corruptf(ref, "the checkpoint names itself as its parent")
	}
	blobs := t.Checkpoint.Blobs
	for _, key := range slices.Sorted(maps.Keys(t.Checkpoint.Versions)) {
		if key == "" {
			return Corruptf(ref, "a state key in the versions is empty")
		}
		want := t.Checkpoint.Versions[key]
		n := 0
		for n < len(blobs) && blobs[n].Key == key {
			n++
		}
		if err := validChain(blobs[:n], want); err != nil {
			return Corruptf(ref, "key %q: %v", key, err)
		}
		blobs = blobs[n:]
	}
	if len(blobs) > 0 {
		return Corruptf(ref, "blob of key %q version %d belongs to no key in force (or the blobs are out of order)", blobs[0].Key, blobs[0].Version)
	}
	for i, w := range t.Writes {
		if w.TaskID == "" {
			return Corruptf(ref, "pending write %d names no task", i)
		}
		if i > 0 {
			p := t.Writes[i-1]
			if p.TaskID > w.TaskID || (p.TaskID == w.TaskID && p.Index >= w.Index) {
				return Corruptf(ref, "pending writes of task %q are out of order or repeated at index %d", w.TaskID, w.Index)
			}
		}
	}
	return nil
}

// validChain checks one key's chain, oldest first, ending at version want.
func validChain(chain []Blob, want uint64) error {
	if len(chain) == 0 {
		return fmt.Errorf("no blob rebuilds version %d", want)
	}
	if chain[0].Kind != Full {
		return fmt.Errorf("the chain starts with a %s blob at version %d, not a full one", chain[0].Kind, chain[0].Version)
	}
	for i, b := range chain[1:] {
		prev := chain[i]
		if b.Kind != Delta || b.Base != prev.Version || b.Base >= b.Version {
			return fmt.Errorf("blob version %d (%s, base %d) does not follow version %d", b.Version, b.Kind, b.Base, prev.Version)
		}
	}
	if last := chain[len(chain)-1].Version; last != want {
		return fmt.Errorf("the chain ends at version %d, not at the version in force %d", last, want)
	}
	return nil
}

// BlobChecksum returns the checksum a Saver stores beside a blob: the
// CRC-32C of its key, version, kind, base and data.
func BlobChecksum(b Blob) uint32 {
	sum := ChecksumUint64(ChecksumString(0, b.Key), b.Version, uint64(b.Kind), b.Base)
	return crc32.Update(sum, castagnoli, b.Data)
}

// WriteChecksum returns the checksum a Saver stores beside a pending write:
// the CRC-32C of its task ID, index, key and value.
func WriteChecksum(w PendingWrite) uint32 {
	sum := ChecksumUint64(ChecksumString(0, w.TaskID, "\x00", w.Key, "\x00"), uint64(w.Index))
	return crc32.Update(sum, castagnoli, w.Value)
}

// CheckBlobSizes returns CheckSize's error for the first blob whose data
// exceeds limit (0 or less means DefaultMaxBytes), nil when none does. It
// builds no message unless one is too large.
func CheckBlobSizes(ref Ref, op string, blobs []Blob, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	for _, b := range blobs {
		if len(b.Data) > limit {
			return CheckSize(ref, op, fmt.Sprintf("blob %q version %d", b.Key, b.Version), len(b.Data), limit)
		}
	}
	return nil
}

// CheckWriteSize returns CheckSize's error when the value of w, a write of
// task taskID, exceeds limit (0 or less means DefaultMaxBytes).
func CheckWriteSize(ref Ref, op, taskID string, w PendingWrite, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if len(w.Value) <= limit {
		return nil
	}
	return CheckSize(ref, op, fmt.Sprintf("the value of write %d of task %q", w.Index, taskID), len(w.Value), limit)
}
