package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/dbtest"
	"github.com/trellis-agents/trellis/server/db/postgres"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a DB on a fresh schema, dropped when t ends.
func open(t *testing.T) *postgres.DB {
	t.Helper()
	dsn, schema := pgdbtest.Schema(t)
	d, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestSuite runs the conformance suite with a fresh schema per subtest.
func TestSuite(t *testing.T) {
	dbtest.Run(t, func(t *testing.T) db.DB { return open(t) })
}

// TestSuiteShared runs the suite against one DB shared by every subtest.
func TestSuiteShared(t *testing.T) {
	d := open(t)
	dbtest.Run(t, func(t *testing.T) db.DB { return d })
}

// BenchmarkRunCycle: ClaimRun + AppendEvents(10) + FinishRun.
func BenchmarkRunCycle(b *testing.B) {
	dsn, schema := pgdbtest.Schema(b)
	d, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { _ = d.Close() })
	dbtest.BenchmarkRunCycle(b, d)
}

// BenchmarkThreadCalls: GetThread + SearchThreads + UpdateThreadMetadata.
func BenchmarkThreadCalls(b *testing.B) {
	dsn, schema := pgdbtest.Schema(b)
	d, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { _ = d.Close() })
	dbtest.BenchmarkThreadCalls(b, d)
}

// BenchmarkImportRows: ImportRows of 500 threads in one transaction.
func BenchmarkImportRows(b *testing.B) {
	dsn, schema := pgdbtest.Schema(b)
	d, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { _ = d.Close() })
	dbtest.BenchmarkImportRows(b, d)
}
