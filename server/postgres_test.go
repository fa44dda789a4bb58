package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// On PostgreSQL (TRELLIS_TEST_PG_DSN, a fresh schema through the URL's
// search_path) the same wiring runs a run on the queue and keeps it
// across a restart.
func TestPostgresBackend(t *testing.T) {
	ctx := context.Background()
	url, schema, conn := pgSchema(t, "serve")

	r := start(t, Config{Database: url, DataDir: t.TempDir()}, nil)
	if r.s.SQLiteFile() != "" {
		t.Errorf("SQLiteFile on PostgreSQL = %q", r.s.SQLiteFile())
	}
	run, err := r.s.svc.Create(ctx, r.s.enqueue, runs.CreateRequest{
		Tenant: api.DefaultTenant, ThreadID: "pg", AssistantID: "echo", CreateThread: true,
		Kwargs: runs.Kwargs{Input: json.RawMessage(`{"log":["pg"]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, r.s.st.db, "pg", run.ID); got.Status != db.RunSuccess {
		t.Fatalf("run: %s %s", got.Status, got.Error)
	}
	r.stop(t)
	r = start(t, Config{Database: url, DataDir: t.TempDir()}, nil)
	th, err := r.s.st.db.GetThread(ctx, api.DefaultTenant, "pg")
	if err != nil || !strings.Contains(string(th.Values), `"echo pg"`) {
		t.Errorf("after a restart: %s %v", th.Values, err)
	}
	var n int
	// The run's job is gone (handed off and deleted with the finish);
	// River's migrations say its tables are in the schema.
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".river_migration").Scan(&n); err != nil || n == 0 {
		t.Errorf("River's tables are not in the schema: %d %v", n, err)
	}

	// The thread sweeper on PostgreSQL: keep_latest prunes the thread's
	// checkpoints to one; delete removes it and them.
	for _, c := range []struct {
		strategy    string
		checkpoints int
	}{{db.TTLKeepLatest, 1}, {db.TTLDelete, 0}} {
		if _, err := r.s.st.db.SetThreadTTL(ctx, api.DefaultTenant, "pg", &db.TTL{Duration: time.Hour, Strategy: c.strategy}); err != nil {
			t.Fatal(err)
		}
		if n, err := r.s.sweepThreads(ctx, time.Now().Add(2*time.Hour)); err != nil || n != 1 {
			t.Fatalf("%s sweep: %d threads, %v", c.strategy, n, err)
		}
		if got := checkpoints(t, r.s, "pg"); got != c.checkpoints {
			t.Errorf("%s sweep: %d checkpoints left; want %d", c.strategy, got, c.checkpoints)
		}
	}
	if _, err := r.s.st.db.GetThread(ctx, api.DefaultTenant, "pg"); err == nil {
		t.Error("the thread survived its delete sweep")
	}
}

// pgSchema returns the test PostgreSQL's URL with a new schema (named from
// prefix) as its search_path, the schema's name, and a connection to the
// database; the schema is dropped when t ends. It skips without
// TRELLIS_TEST_PG_DSN (fails under TRELLIS_REQUIRE_SERVICES=1).
func pgSchema(t testing.TB, prefix string) (url, schema string, conn *pgx.Conn) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	ctx := context.Background()
	schema = fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema, schema, conn
}

// TestPoolSize: a replica's pool gets DefaultPoolConns connections unless
// the database URL sets pool_max_conns, whose value is kept.
func TestPoolSize(t *testing.T) {
	url, _, _ := pgSchema(t, "pool")
	for _, c := range []struct {
		url  string
		want int32
	}{{url, DefaultPoolConns}, {url + "&pool_max_conns=5", 5}} {
		st, err := openStorage(context.Background(), c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := st.pool.Config().MaxConns
		st.close()
		if got != c.want {
			t.Errorf("%s: pool of %d connections, want %d", c.url, got, c.want)
		}
	}
	if got := withPoolSize("postgres://u@h/db?search_path=s"); got != "postgres://u@h/db?pool_max_conns=16&search_path=s" {
		t.Errorf("withPoolSize = %q", got)
	}
}
