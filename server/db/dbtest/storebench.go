package dbtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// BenchmarkThreadCalls measures the store calls a thread page makes that
// are not on the run path: one iteration is GetThread, a metadata-filtered
// SearchThreads of 10 among 100 threads, and UpdateThreadMetadata.
func BenchmarkThreadCalls(b *testing.B, d db.DB) {
	ten := fmt.Sprintf("bench/%d", time.Now().UnixNano())
	for i := range 100 {
		md := db.Metadata{"user": fmt.Sprintf("u%d", i%4), "n": i}
		if _, err := d.CreateThread(bg(), ten, db.Thread{ID: fmt.Sprintf("t%03d", i), Metadata: md}, db.IfExistsRaise); err != nil {
			b.Fatal(err)
		}
	}
	q := db.ThreadQuery{Query: db.Query{Metadata: db.Metadata{"user": "u1"}, Limit: 10}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("t%03d", i%100)
		if _, err := d.GetThread(bg(), ten, id); err != nil {
			b.Fatal(err)
		}
		got, err := d.SearchThreads(bg(), ten, q)
		if err != nil || len(got) != 10 {
			b.Fatalf("SearchThreads = %d threads, %v; want 10", len(got), err)
		}
		if _, err := d.UpdateThreadMetadata(bg(), ten, id, db.Metadata{"seen": i}); err != nil {
			b.Fatal(err)
		}
	}
}
