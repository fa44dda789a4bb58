package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
)

// BenchmarkDurableStepWrite prices what the saver does for one durable
// step, apart from the engine: a task saves its k-th step (k = 1..10, then
// a new task), either as one appended write (checkpoint.WriteAppender,
// what the engine does since steps stopped rewriting) or as PutWrites of
// all k steps (what it did before). ns/op is per step; cpu-ns/op is the
// process's CPU time per step (user + system), steadier than ns/op on a
// loaded machine but blind to the database server's own work.
func BenchmarkDurableStepWrite(b *testing.B) {
	kinds := append(savers(), saverKind{"postgres-async-commit", func(b *testing.B) (checkpoint.Saver, func()) {
		// synchronous_commit=off: PostgreSQL acknowledges the COMMIT
		// before its WAL reaches the disk (a crash of the database
		// server, not of the client, can lose the last steps). An
		// operator's choice, never the saver's: here it shows the cost
		// of a step without the WAL flush.
		dsn, schema := pgdbtest.Schema(b)
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		s, err := postgres.Open(context.Background(), dsn+sep+"synchronous_commit=off", postgres.WithSchema(schema))
		if err != nil {
			b.Fatal(err)
		}
		return s, func() { s.Close() }
	}})
	for _, sk := range kinds {
		if sk.name == "redis" {
			continue
		}
		for _, way := range []string{"append", "rewrite"} {
			b.Run(sk.name+"/"+way, func(b *testing.B) {
				saver, closeFn := sk.open(b)
				defer closeFn()
				ctx := context.Background()
				ref, err := saver.Put(ctx, checkpoint.Ref{ThreadID: "bench"}, checkpoint.Checkpoint{ID: checkpoint.NewID(), Created: time.Now()}, checkpoint.Metadata{Source: checkpoint.SourceInput, Step: -1})
				if err != nil {
					b.Fatal(err)
				}
				a, _ := saver.(checkpoint.WriteAppender)
				if way == "append" && a == nil {
					b.Skipf("%T does not append", saver)
				}
				var ws []checkpoint.PendingWrite
				task := 0
				b.ReportAllocs()
				cpu := cpuNanos()
				i := 0
				for b.Loop() {
					if i%10 == 0 {
						task++
						ws = ws[:0]
					}
					k := len(ws)
					v, _ := json.Marshal(map[string]any{"name": "piece", "call": k, "value": fmt.Sprintf("piece %d of task %d", k, task)})
					ws = append(ws, checkpoint.PendingWrite{Index: k, Key: checkpoint.WriteStep, Value: v})
					id := fmt.Sprint("task-", task)
					if way == "append" && k > 0 {
						err = a.AppendWrites(ctx, ref, id, ws[k:])
					} else {
						err = saver.PutWrites(ctx, ref, id, ws)
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

// cpuNanos is the process's CPU time so far.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
