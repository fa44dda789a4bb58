package dbtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// BenchmarkRunCycle measures the store's share of one run's life on d:
// ClaimRun, AppendEvents of 10 events in one batch, and FinishRun. The
// runs (one per iteration, on one thread) are created before the clock
// starts.
func BenchmarkRunCycle(b *testing.B, d db.DB) {
	ten := fmt.Sprintf("bench/%d", time.Now().UnixNano())
	if _, err := d.CreateThread(bg(), ten, db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
		b.Fatal(err)
	}
	runs := make([]string, b.N)
	for i := range runs {
		r, err := d.CreateRun(bg(), ten, db.Run{ThreadID: "t", AssistantID: "a"})
		if err != nil {
			b.Fatal(err)
		}
		runs[i] = r.ID
	}
	evs := events("values", 0, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, l, err := d.ClaimRun(bg(), ten, runs[i], "bench", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.AppendEvents(bg(), l, evs); err != nil {
			b.Fatal(err)
		}
		if _, err := d.FinishRun(bg(), l, db.RunSuccess, nil, ""); err != nil {
			b.Fatal(err)
		}
	}
}
