//go:build !race

// Allocation counts differ under the race detector.

package graph

import (
	"context"
	"testing"
)

// TestParallelAllocations bounds what a parallel task allocates beyond its
// node: a goroutine's closure per task was one allocation each; workers
// cost one per worker (0.25 a task for fan-out-100), and now the step's
// bookkeeping, workers' function and timer are the run's, reused (0.08).
func TestParallelAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations")
	}
	noStalls(t)
	const n = 100
	g, sum := quickFanout(t, n, func() {})
	ctx := context.Background()
	per := testing.AllocsPerRun(20, func() {
		res, err := g.Invoke(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Get(res.State); got != n {
			t.Fatalf("sum = %d, want %d", got, n)
		}
	}) / n
	t.Logf("allocations per parallel task: %.2f", per)
	if per > 0.12 {
		t.Errorf("a parallel task allocates %.2f times, want at most 0.12", per)
	}
}
