//go:build unix

package graph

import (
	"syscall"
	"testing"
	"time"
)

var benchOut Output

var benchKey = NewKey("bench", Sum[int]())

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWritesOne is what a node returning graph.Writes(k.Set(v))
// spends on its writes: the copy and the Update's conversion to Output.
// cpu-ns/op counts the process's CPU (the GC's included), steadier than
// wall time on a shared machine.
func BenchmarkWritesOne(b *testing.B) {
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		benchOut = Writes(benchKey.Set(1))
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
