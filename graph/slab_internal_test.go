package graph

import (
	"bytes"
	"testing"
)

// TestCarve checks that what carveBytes and carveString hand out is a copy
// no later carve or append writes into: the chunks are shared by every run.
func TestCarve(t *testing.T) {
	src := []byte("0123456789abcdef0123456789abcdef")
	s := carveString(src)
	a := carveBytes([]byte("abc"))
	b := carveBytes([]byte("xyz"))
	src[0] = 'X' // the caller may reuse its buffer
	if s != "0123456789abcdef0123456789abcdef" {
		t.Errorf("carveString kept the caller's buffer: %q", s)
	}
	if cap(a) != len(a) || cap(b) != len(b) {
		t.Errorf("carved slices have room to grow into the chunk: cap %d, %d", cap(a), cap(b))
	}
	a = append(a, "!!!"...) // must copy, not overwrite b
	if string(b) != "xyz" || string(a) != "abc!!!" {
		t.Errorf("after an append: a = %q, b = %q; want abc!!!, xyz", a, b)
	}
	big := bytes.Repeat([]byte("z"), maxCarvable+1)
	if c := carveBytes(big); &c[0] == &big[0] || !bytes.Equal(c, big) {
		t.Error("a large value is not copied")
	}
	if carveString(nil) != "" || carveBytes(nil) != nil {
		t.Error("an empty value is not empty")
	}
	for range 2 * byteChunk / 32 { // across chunk boundaries
		want := "0123456789abcdef0123456789abcdef"
		if got := carveString([]byte(want)); got != want {
			t.Fatalf("carveString = %q, want %q", got, want)
		}
	}
}
