package graph

import "encoding/binary"

// putHex writes x into b[:16] as 16 lowercase hex digits, the most
// significant first: what a loop over its nibbles writes, eight digits at
// a time (a checkpoint ID and a task ID are written at every save).
func putHex(b []byte, x uint64) {
	_ = b[15]
	binary.BigEndian.PutUint64(b[:8], hexWord(uint32(x>>32)))
	binary.BigEndian.PutUint64(b[8:16], hexWord(uint32(x)))
}

// hexWord returns the eight hex digits of x as the bytes of a word, the
// most significant digit in its high byte.
func hexWord(x uint32) uint64 {
	v := uint64(x)
	// Spread the nibbles, one a byte.
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	// A nibble of 10 or more gets 'a'-'0'-10 more than '0'; no byte
	// carries into the next.
	letters := ((v + 0x0606060606060606) >> 4) & 0x0101010101010101
	return v + 0x3030303030303030 + letters*('a'-'0'-10)
}
