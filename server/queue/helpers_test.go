package queue

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// backend opens a fresh database for a test and returns a Config holding it.
type backend struct {
	name string
	open func(t testing.TB) Config
}

var backends = []backend{
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

// forEach runs f as a subtest on each backend.
func forEach(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

func openSQLite(t testing.TB) Config {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "queue.db"), "queue_test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Config{SQLite: db.Write, Logger: quietLogger()}
}

func openPostgres(t testing.TB) Config {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	// River names its NOTIFY channels after the schema and allows 46
	// bytes, less than pgdbtest's schema names, so tests make their own.
	schema := "queue_test_" + strconv.FormatUint(rand.Uint64(), 36)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	pool, err := pgdb.Connect(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return Config{Postgres: pool, Schema: schema, Logger: quietLogger()}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// logBuffer is a concurrency-safe log sink for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start creates the queue and stops it when the test ends (before the
// database is closed: cleanups run last-registered first).
func start(t testing.TB, cfg Config) *Queue {
	t.Helper()
	q, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return q
}

// jobsOf lists the run jobs of a thread, in every state.
func jobsOf(t testing.TB, q *Queue, threadID string) []*rivertype.JobRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params := river.NewJobListParams().Kinds(Kind).States(rivertype.JobStates()...).First(10000)
	var (
		res *river.JobListResult
		err error
	)
	switch e := q.eng.(type) {
	case *sqliteEngine:
		res, err = e.client.JobList(ctx, params)
	case *pgEngine:
		res, err = e.client.JobList(ctx, params)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []*rivertype.JobRow
	for _, j := range res.Jobs {
		var a args
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatalf("job %d: %v", j.ID, err)
		}
		if a.ThreadID == threadID {
			out = append(out, j)
		}
	}
	return out
}

// call is one Advance call seen by a test.
type call struct {
	tenant, thread string
	at             time.Time
}

// recv waits for the next call or fails the test.
func recv(t testing.TB, ch <-chan call, within time.Duration) call {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(within):
		t.Fatalf("Advance was not called within %s", within)
		return call{}
	}
}

// none fails the test when a call arrives within d.
func none(t testing.TB, ch <-chan call, d time.Duration) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("unexpected Advance call for %s/%s", c.tenant, c.thread)
	case <-time.After(d):
	}
}
