package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPutHex checks the word-wise hex digits against fmt's, on the edges
// of each nibble's range and on random words.
func TestPutHex(t *testing.T) {
	xs := []uint64{0, 1, 9, 10, 15, 16, 0x9a9a9a9a9a9a9a9a, 0xa9a9a9a9a9a9a9a9, 0x0123456789abcdef, 0xfedcba9876543210, 1<<64 - 1}
	for range 10000 {
		xs = append(xs, rand.Uint64())
	}
	var b [16]byte
	for _, x := range xs {
		putHex(b[:], x)
		if got, want := string(b[:]), fmt.Sprintf("%016x", x); got != want {
			t.Fatalf("putHex(%#x) = %q, want %q", x, got, want)
		}
	}
}

// TestTaskIDHex checks that a task ID is its hash's two lanes in hex.
func TestTaskIDHex(t *testing.T) {
	for range 1000 {
		h := fnv128{a: rand.Uint64(), b: rand.Uint64()}
		if got, want := h.hex(), fmt.Sprintf("%016x%016x", h.a, h.b); got != want {
			t.Fatalf("hex of %#x, %#x = %q, want %q", h.a, h.b, got, want)
		}
	}
}

// TestFormatID checks the word-wise layout of a checkpoint ID against the
// byte-wise one it replaced.
func TestFormatID(t *testing.T) {
	ref := func(t int64, r uint64) string {
		var u [16]byte
		ms, seq := t>>12, t&0xfff
		for i := range 6 {
			u[i] = byte(ms >> (40 - 8*i))
		}
		u[6], u[7] = 0x70|byte(seq>>8), byte(seq)
		u[8] = 0x80 | byte(r>>56)&0x3f
		for i := 9; i < 16; i++ {
			u[i] = byte(r >> (8 * (15 - i)))
		}
		const hexDigits = "0123456789abcdef"
		var s []byte
		for i, b := range u {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				s = append(s, '-')
			}
			s = append(s, hexDigits[b>>4], hexDigits[b&0xf])
		}
		return string(s)
	}
	for i := range 10000 {
		ts := rand.Int64N(1<<60) & (1<<60 - 1)
		if i == 0 {
			ts = 0
		}
		r := rand.Uint64()
		if got, want := formatID(ts, r), ref(ts, r); string(got[:]) != want {
			t.Fatalf("formatID(%#x, %#x) = %q, want %q", ts, r, got, want)
		}
	}
}
