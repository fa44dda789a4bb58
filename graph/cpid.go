package graph

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// lastIDTime is the time stamp of the last checkpoint ID this process made,
// in UUIDv7 units: milliseconds since the Unix epoch << 12, plus the
// fraction of the millisecond in 256 ns steps (0–3906).
var lastIDTime atomic.Int64

// checkpointID returns a new checkpoint ID for a checkpoint created at now:
// a UUIDv7 string laid out as checkpoint.NewID's (the millisecond, then a
// 12-bit sub-millisecond sequence, then 62 random bits), so IDs from either
// sort by creation time. Every ID this process makes sorts after the
// previous one, even when the clock steps back or two saves share a 256 ns
// step: the time stamp then moves one step past the last.
//
// It is the engine's own so that a step's save reads the clock once (for
// the ID and Created) and allocates nothing of its own (the string is
// carved from a shared chunk, see carveString); checkpoint.NewID
// reads crypto/rand and allocates twice. Only the engine makes the IDs of
// the checkpoints it saves, so no other generator's IDs interleave with
// these in a namespace. The random bits come from the runtime's ChaCha8
// generator: an ID needs to be unique, not secret.
func checkpointID(now time.Time) string {
	var cv carver
	id := cv.checkpointID(now)
	cv.release()
	return id
}

// checkpointID is checkpointID carving from cv's chunk.
func (cv *carver) checkpointID(now time.Time) string {
	nano := now.UnixNano()
	ms := nano / int64(time.Millisecond)
	t := ms<<12 | (nano-ms*int64(time.Millisecond))>>8
	for {
		last := lastIDTime.Load()
		if t <= last {
			t = last + 1
		}
		if lastIDTime.CompareAndSwap(last, t) {
			break
		}
	}
	s := formatID(t, rand.Uint64())
	return cv.string(s[:])
}

// formatID lays out a UUIDv7 string from t, a time stamp as lastIDTime
// holds it, and 62 random bits taken from r.
func formatID(t int64, r uint64) [36]byte {
	// The UUID's two halves: the millisecond, the version and the
	// sequence; then the variant and the random bits.
	hi := uint64(t>>12)<<16 | 0x7000 | uint64(t&0xfff)
	lo := (0x80|r>>56&0x3f)<<56 | r&(1<<56-1)
	var h [32]byte
	putHex(h[:16], hi)
	putHex(h[16:], lo)
	var s [36]byte
	copy(s[0:8], h[0:8])
	copy(s[9:13], h[8:12])
	copy(s[14:18], h[12:16])
	copy(s[19:23], h[16:20])
	copy(s[24:36], h[20:32])
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
	return s
}

// maxIDLead is how far ahead of this process's clock a head's time stamp
// may be for observeCheckpointID to follow it.
const maxIDLead = 24 * time.Hour

// observeCheckpointID makes every checkpoint ID this process makes from
// now on sort after id, a UUIDv7 checkpoint ID read from a saver (a
// namespace's head). IDs made by another process, or by this host before
// its clock stepped back, may be stamped after this process's clock; the
// savers refuse a checkpoint whose ID sorts before the latest, so without
// this a thread would stop saving until the clock caught up. An ID that is
// not a UUIDv7, or is stamped more than maxIDLead ahead, is ignored.
func observeCheckpointID(id string) {
	if len(id) != 36 || id[14] != '7' || id[8] != '-' || id[13] != '-' || id[18] != '-' {
		return
	}
	var t int64
	for i, c := range id[:18] {
		if i == 8 || i == 13 || i == 14 {
			continue // dashes and the version digit
		}
		var d int64
		switch {
		case '0' <= c && c <= '9':
			d = int64(c - '0')
		case 'a' <= c && c <= 'f':
			d = int64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = int64(c-'A') + 10
		default:
			return
		}
		t = t<<4 | d
	}
	// t is the millisecond << 12 plus the 12-bit sequence, as lastIDTime.
	// A stamp beyond maxIDLead from now is a corrupt ID, not a clock: it
	// would move the IDs of every thread this process saves, and one at
	// the end of the range would make the next IDs wrap around.
	if t > (time.Now().Add(maxIDLead).UnixMilli())<<12 {
		return
	}
	for {
		last := lastIDTime.Load()
		if t <= last || lastIDTime.CompareAndSwap(last, t) {
			return
		}
	}
}
