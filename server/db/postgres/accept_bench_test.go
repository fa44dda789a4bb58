package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// backendCPU is the CPU time, in clock ticks (1/100 s on Linux), the
// PostgreSQL backend of process pid has used; ok is false when its
// /proc entry cannot be read (a server on another host).
func backendCPU(pid int) (ticks int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // from field 3, the state
	u, err1 := strconv.ParseInt(f[11], 10, 64)               // field 14, utime
	k, err2 := strconv.ParseInt(f[12], 10, 64)               // field 15, stime
	return u + k, err1 == nil && err2 == nil
}

// BenchmarkAccept is the accept of a run (CreateRunTx in a transaction of
// its own, a pgdb.Tx asking for a pre-claim as the queue's hand-off does) on a new thread
// and on one that exists, on a pool of one connection: besides ns/op it
// reports the CPU its PostgreSQL backend spent an accept (backend-us/op)
// when the server runs on this host, the cost the accept's statements
// put on the server. TRELLIS_BENCH_PG_PARAMS adds URL parameters to the
// database URL, as for server's BenchmarkRunsWaitPostgres.
func BenchmarkAccept(b *testing.B) {
	for _, existing := range []bool{false, true} {
		b.Run(map[bool]string{false: "thread=new", true: "thread=existing"}[existing], func(b *testing.B) {
			ctx := context.Background()
			dsn, schema := pgdbtest.Schema(b)
			if extra := os.Getenv("TRELLIS_BENCH_PG_PARAMS"); extra != "" {
				dsn += "&" + extra // synchronous_commit=off, say, to leave out the WAL flush
			}
			d, err := Open(ctx, dsn+"&pool_max_conns=1", WithSchema(schema))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = d.Close() })
			if existing {
				if _, err := d.CreateThread(ctx, "default", db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
					b.Fatal(err)
				}
			}
			var pid int
			if err := d.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			kw := json.RawMessage(`{"input":{"messages":[{"role":"user","content":"hi"}]}}`)
			n := 0
			accept := func() {
				n++
				th, thread := "t", (*db.Thread)(nil)
				if !existing {
					th = fmt.Sprintf("t%d", n)
					thread = &db.Thread{ID: th, Metadata: db.Metadata{"graph_id": "echo"}}
				}
				// The queue's transaction (server/queue's hand-off): a
				// pgdb.Tx, and a pre-claim asked for.
				tx, err := pgdb.Begin(ctx, d.pool, pgx.TxOptions{})
				if err != nil {
					b.Fatal(err)
				}
				pctx := txhook.WithPreClaim(ctx, &txhook.PreClaim{Owner: "bench", Until: time.Now().Add(time.Minute)})
				if _, err := d.CreateRunTx(pctx, pgx.Tx(tx), "default", thread, db.Run{ThreadID: th, AssistantID: "a", Kwargs: kw, MultitaskStrategy: "reject"}); err != nil {
					_ = tx.Rollback(ctx)
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			accept() // the statements prepared on the connection
			c0, cpuOK := backendCPU(pid)
			b.ResetTimer()
			for b.Loop() {
				accept()
			}
			b.StopTimer()
			if c1, ok := backendCPU(pid); cpuOK && ok {
				b.ReportMetric(float64(c1-c0)*1e4/float64(b.N), "backend-us/op")
			}
		})
	}
}
