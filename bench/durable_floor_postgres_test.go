package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
)

// BenchmarkDurableStepFloorPostgres prices what no PostgreSQL saver can
// avoid for a durable step, next to BenchmarkDurableStepWrite's figures
// (BenchmarkDurableStepFloor is SQLite's): a round trip that does nothing
// (SELECT 1), and a round trip that inserts the step's bytes as one row
// of a table with only a bigint primary key, an implicit transaction
// whose commit waits for the WAL flush (sync) or not (async,
// synchronous_commit=off). The gap between the insert and the saver's
// append is the saver's own work: its wider key, the foreign key's check,
// the task's lock (docs/architecture.md, "The durable step on
// PostgreSQL").
func BenchmarkDurableStepFloorPostgres(b *testing.B) {
	ctx := context.Background()
	for _, commit := range []string{"sync", "async"} {
		for _, way := range []string{"select1", "insert"} {
			b.Run(way+"/"+commit, func(b *testing.B) {
				dsn, schema := pgdbtest.Schema(b)
				if commit == "async" {
					sep := "?"
					if strings.Contains(dsn, "?") {
						sep = "&"
					}
					dsn += sep + "synchronous_commit=off"
				}
				pool, err := pgdb.Connect(ctx, dsn, schema)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				if _, err := pool.Exec(ctx, `CREATE TABLE floor (id bigint PRIMARY KEY, value bytea)`); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu := cpuNanos()
				i := 0
				for b.Loop() {
					if way == "select1" {
						_, err = pool.Exec(ctx, `SELECT 1`)
					} else {
						// The bytes BenchmarkDurableStepWrite appends.
						k, task := i%10, i/10+1
						v, _ := json.Marshal(map[string]any{"name": "piece", "call": k, "value": fmt.Sprintf("piece %d of task %d", k, task)})
						_, err = pool.Exec(ctx, `INSERT INTO floor (id, value) VALUES ($1, $2)`, int64(i), v)
					}
					if err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
