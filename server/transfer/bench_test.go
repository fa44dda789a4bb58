package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	ckpg "github.com/trellis-agents/trellis/checkpoint/postgres"
	cksqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db"
	dbpg "github.com/trellis-agents/trellis/server/db/postgres"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/store"
	stpg "github.com/trellis-agents/trellis/store/postgres"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// fillSQLite writes threads threads into a new SQLite file: a thread row,
// 10 root checkpoints (a growing delta chain) and 3 in a subgraph
// namespace, each with a pending write, and a store item per thread.
func fillSQLite(b *testing.B, threads int) Side {
	ctx := context.Background()
	file := filepath.Join(b.TempDir(), "src.db")
	d, err := dbsqlite.Open(ctx, file)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	s, err := cksqlite.Open(ctx, file)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	st, err := stsqlite.Open(ctx, file)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	for i := range threads {
		id := fmt.Sprintf("thread-%05d", i)
		if _, err := d.CreateThread(ctx, "default", db.Thread{ID: id, Metadata: db.Metadata{"i": i}}, db.IfExistsRaise); err != nil {
			b.Fatal(err)
		}
		for _, ns := range []struct {
			name string
			n    int
		}{{"", 10}, {"sub:1", 3}} {
			head := ""
			for step := range ns.n {
				blob := checkpoint.Blob{Key: "messages", Version: uint64(step + 1), Kind: checkpoint.Delta, Base: uint64(step), Data: json.RawMessage(`["a message of about forty bytes, step"]`)}
				if step == 0 {
					blob.Kind, blob.Base = checkpoint.Full, 0
				}
				cp := checkpoint.Checkpoint{ID: checkpoint.NewID(), Versions: map[string]uint64{"messages": uint64(step + 1)},
					Blobs: []checkpoint.Blob{blob}, Next: []checkpoint.Task{{ID: "t", Node: "n", Path: "0"}}, Created: time.Now()}
				ref := checkpoint.Ref{ThreadID: id, Namespace: ns.name, ID: head}
				out, err := s.Put(ctx, ref, cp, checkpoint.Metadata{Source: checkpoint.SourceLoop, Step: step, Parent: head, RunID: "r"})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.PutWrites(ctx, out, "t", []checkpoint.PendingWrite{{TaskID: "t", Key: "messages", Value: json.RawMessage(`["w"]`)}}); err != nil {
					b.Fatal(err)
				}
				head = cp.ID
			}
		}
		if err := st.Put(ctx, []string{"default", "users", id}, "profile", json.RawMessage(`{"name":"n"}`), store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return Side{DB: d, Saver: s, Store: st}
}

// BenchmarkTransferSQLiteToPostgres transfers 200 threads (2 600
// checkpoints with their writes, 200 thread rows and store items) from a
// SQLite file into a fresh PostgreSQL schema per iteration, and reports
// checkpoints per second.
func BenchmarkTransferSQLiteToPostgres(b *testing.B) {
	const threads = 200
	src := fillSQLite(b, threads)
	ctx := context.Background()
	var cps int
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dsn, schema := pgdbtest.Schema(b)
		pool, err := pgdb.Connect(ctx, dsn, schema)
		if err != nil {
			b.Fatal(err)
		}
		d, err := dbpg.New(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		s, err := ckpg.New(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		st, err := stpg.New(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := Run(ctx, src, Side{DB: d, Saver: s, Store: st}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		pool.Close()
		cps += rep.Checkpoints.Copied
		if rep.Checkpoints.Copied != threads*13 {
			b.Fatalf("copied %d checkpoints, want %d", rep.Checkpoints.Copied, threads*13)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cps)/b.Elapsed().Seconds(), "checkpoints/s")
}
