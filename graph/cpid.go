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
	var u [16]byte
	ms, seq := t>>12, t&0xfff
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6], u[7] = 0x70|byte(seq>>8), byte(seq)
	r := rand.Uint64()
	u[8] = 0x80 | byte(r>>56)&0x3f
	for i := 9; i < 16; i++ {
		u[i] = byte(r >> (8 * (15 - i)))
	}
	const hexDigits = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hexDigits[b>>4], hexDigits[b&0xf]
		j += 2
	}
	return cv.string(s[:])
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
