package graph

import (
	"testing"
	"unsafe"
)

// TestHotStructSizes guards the sizes of the structs allocated for every
// run and every task. The Go allocator rounds each allocation up to a size
// class, and objects over 512 bytes carry an 8-byte header, so a run of
// 768 bytes costs 896: one field too many adds 128 bytes to every Invoke
// (found when usage accounting was added). Grow them only on purpose, and
// update the limits with the new size class in mind.
func TestHotStructSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		size, max uintptr
	}{
		{"run", unsafe.Sizeof(run{}), 632},   // class 640 with its 8-byte header (768 before its buffers moved to runBufs)
		{"task", unsafe.Sizeof(task{}), 176}, // class 176
		{"Result", unsafe.Sizeof(Result{}), 160},
		{"NodeRun", unsafe.Sizeof(NodeRun{}), 64}, // a run's path holds one per task
	} {
		if c.size > c.max {
			t.Errorf("%s is %d bytes, over its budget of %d (see the comment above)", c.name, c.size, c.max)
		}
	}
}
