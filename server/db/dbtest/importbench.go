package dbtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// BenchmarkImportRows measures db.Exporter.ImportRows of 500 thread rows
// (one transaction) on d. The rows are exported once; each iteration
// imports them under a tenant of its own, so every row is inserted.
func BenchmarkImportRows(b *testing.B, d db.DB) {
	e, isExporter := d.(db.Exporter)
	if !isExporter {
		b.Skipf("%T is not a db.Exporter", d)
	}
	const n = 500
	ten := fmt.Sprintf("bench/%d", time.Now().UnixNano())
	for i := range n {
		if _, err := d.CreateThread(bg(), ten, db.Thread{ID: fmt.Sprintf("t%03d", i), Metadata: db.Metadata{"i": i}}, db.IfExistsRaise); err != nil {
			b.Fatal(err)
		}
	}
	var tb db.Table
	for _, t := range db.Tables {
		if t.Name == "trellis_threads" {
			tb = t
		}
	}
	all, err := e.ExportRows(bg(), tb, nil, 10*n)
	if err != nil {
		b.Fatal(err)
	}
	tenant := tb.Index("tenant")
	var rows []db.Row
	for _, r := range all {
		if r[tenant] == ten {
			rows = append(rows, r)
		}
	}
	if len(rows) != n {
		b.Fatalf("exported %d rows of the tenant, want %d", len(rows), n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		to := fmt.Sprintf("%s/%d", ten, i)
		for _, r := range rows {
			r[tenant] = to
		}
		got, err := e.ImportRows(bg(), tb, rows)
		if err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("imported %d rows, want %d", got, n)
		}
	}
}
