package graph

import (
	"testing"
	"unsafe"
)

// TestWriteSize guards the size of a Write: at 32 bytes the compiler copies
// one in registers (see keyRef), and a slab of writes stays small.
func TestWriteSize(t *testing.T) {
	if got := unsafe.Sizeof(Write{}); got > 32 {
		t.Fatalf("a Write is %d bytes, want at most 32: keep its key a *keyRef and its flags in the padding", got)
	}
}
