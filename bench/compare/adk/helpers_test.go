package adk

import (
	"strconv"
	"testing"
)

// The helpers of ../helpers_test.go, for this module's side of the
// comparison (see ../README.md: ADK lives in a module of its own).

// fanoutWidth is the number of parallel workers in the Fanout100 shape.
const fanoutWidth = 100

// chainNode returns the name of the i-th node (1-based) of a chain: n1..nN.
func chainNode(i int) string { return "n" + strconv.Itoa(i) }

// worker returns the name of the i-th (0-based) fan-out worker: w0..w99.
func worker(i int) string { return "w" + strconv.Itoa(i) }

// check fails the benchmark if a graph computed the wrong answer. Every
// iteration is checked: a benchmark that computes nothing proves nothing.
func check(b *testing.B, framework string, got, want int) {
	if got != want {
		b.Fatalf("%s: got %d, want %d", framework, got, want)
	}
}

// must fails the benchmark on a setup or invocation error.
func must(b *testing.B, err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}
