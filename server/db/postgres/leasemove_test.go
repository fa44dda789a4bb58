package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/dbtest"
)

// TestLeasesMoveOntoRuns: a schema at version 7, whose leases were rows
// of trellis_leases, opened by this version keeps each lease on its run's
// row (step 8), and the table is gone.
func TestLeasesMoveOntoRuns(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	pool, err := pgdb.Connect(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgdb.Migrate(ctx, pool, Component, migrations[:7]); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	exp := time.Now().Add(-time.Minute).Truncate(time.Microsecond).UTC()
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO trellis_threads (tenant, thread_id, status, metadata, interrupts, error, created_at, updated_at)
VALUES ('ten', 'th', 'busy', '{}', '{}', '', now(), now())`, nil},
		{`INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, error,
	created_at, updated_at, cancel_requested, lease_token, event_seq)
VALUES ('ten', 'held', 'th', 'a', 'running', '{}', '{}', 'reject', '', now(), now(), '', 3, 0),
	('ten', 'free', 'th', 'a', 'success', '{}', '{}', 'reject', '', now(), now(), '', 1, 0)`, nil},
		{`INSERT INTO trellis_leases (tenant, run_id, thread_id, owner, token, expires_at) VALUES ('ten', 'held', 'th', 'w', 3, $1)`,
			[]any{exp}},
	} {
		if _, err := pool.Exec(ctx, st.q, st.args...); err != nil {
			pool.Close()
			t.Fatal(err)
		}
	}
	pool.Close()
	d, err := Open(ctx, dsn, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close() }()
	var leases *string
	if err := d.pool.QueryRow(ctx, `SELECT to_regclass('trellis_leases')::text`).Scan(&leases); err != nil || leases != nil {
		t.Errorf("trellis_leases after the migration: %v (%v), want none", leases, err)
	}
	dbtest.CheckMovedLease(t, d, db.Lease{Tenant: "ten", RunID: "held", ThreadID: "th", Owner: "w", Token: 3, ExpiresAt: exp}, "free")
}
