package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/dbtest"
)

// TestLeasesMoveOntoRuns: a file at schema 5, whose leases were rows of
// trellis_leases, opened by this version keeps each lease on its run's
// row (step 6), and the table is gone.
func TestLeasesMoveOntoRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	sq, err := sqlitedb.Open(ctx, path, Component, migrations[:5])
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(-time.Minute).Truncate(time.Microsecond).UTC()
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO trellis_threads (tenant, thread_id, status, metadata, interrupts, error, created_at, updated_at)
VALUES ('ten', 'th', 'busy', '{}', '{}', '', 1, 1)`, nil},
		{`INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, error,
	created_at, updated_at, cancel_requested, seq, lease_token, event_seq)
VALUES ('ten', 'held', 'th', 'a', 'running', '{}', '{}', 'reject', '', 1, 1, '', 1, 3, 0),
	('ten', 'free', 'th', 'a', 'success', '{}', '{}', 'reject', '', 1, 1, '', 2, 1, 0)`, nil},
		{`INSERT INTO trellis_leases (tenant, run_id, thread_id, owner, token, expires_at) VALUES ('ten', 'held', 'th', 'w', 3, ?)`,
			[]any{exp.UnixMicro()}},
	} {
		if _, err := sq.Write.ExecContext(ctx, st.q, st.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := sq.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int
	if err := d.sq.Read.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'trellis_leases'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("trellis_leases after the migration: %d tables (%v), want none", n, err)
	}
	dbtest.CheckMovedLease(t, d, db.Lease{Tenant: "ten", RunID: "held", ThreadID: "th", Owner: "w", Token: 3, ExpiresAt: exp}, "free")
}
