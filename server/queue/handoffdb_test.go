package queue

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// roundTrips counts what a pool sends: each query and each batch is one
// round trip to the server.
type roundTrips struct{ queries, batches atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.queries.Add(1)
	return ctx
}
func (*roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return ctx
}
func (*roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (*roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *roundTrips) total() int64 { return r.queries.Load() + r.batches.Load() }

// The finish transaction's delete of a handed-off row costs one round
// trip (the savepoint, the delete and the release sent together, where
// they were three), deletes only a row still as inserted, and a delete
// that fails when it runs leaves the caller's transaction usable: what it
// wrote before and after commits, and the row it failed on stays.
func TestDeleteHandoffInOneRoundTrip(t *testing.T) {
	cfg := openPostgres(t)
	ctx := context.Background()
	if err := Migrate(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	createMarks(t, cfg)
	trips := &roundTrips{}
	pcfg := cfg.Postgres.Config().Copy()
	pcfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var id, other int64
	for _, p := range []*int64{&id, &other} {
		if err := pool.QueryRow(ctx, `INSERT INTO river_job (args, kind, max_attempts, state, scheduled_at)
			VALUES ('{}', 'advance', 1, 'scheduled', now() + interval '1 hour') RETURNING id`).Scan(p); err != nil {
			t.Fatal(err)
		}
	}

	eng := &pgEngine{pool: pool, schema: cfg.Schema}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := execIn(ctx, tx, `INSERT INTO folds_marks (thread) VALUES ($1)`, "kept"); err != nil {
			return err
		}
		for i, want := range []bool{true, false} { // the second finds the row gone
			before := trips.total()
			ours, err := eng.deleteHandoff(ctx, tx, id)
			if err != nil {
				t.Fatalf("delete %d: %v", i+1, err)
			}
			if ours != want {
				t.Errorf("delete %d reported the row ours: %v, want %v", i+1, ours, want)
			}
			if n := trips.total() - before; n != 1 {
				t.Errorf("delete %d took %d round trips, want 1", i+1, n)
			}
		}
		// A delete that fails when it runs (the row locked by another
		// transaction, as River's fetch does, past the lock timeout)
		// leaves tx usable.
		locker, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = locker.Rollback(ctx) }()
		if _, err := locker.Exec(ctx, `SELECT id FROM river_job WHERE id = $1 FOR UPDATE`, other); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		if _, err := eng.deleteHandoff(ctx, tx, other); err == nil {
			t.Error("a delete of a row locked past the lock timeout succeeded")
		}
		return execIn(ctx, tx, `INSERT INTO folds_marks (thread) VALUES ($1)`, "after")
	})
	if err != nil {
		t.Fatalf("the transaction around the deletes: %v", err)
	}
	for _, thread := range []string{"kept", "after"} {
		if n := countMarks(t, cfg, thread); n != 1 {
			t.Errorf("the transaction committed %d rows of %q, want 1", n, thread)
		}
	}
	for _, c := range []struct {
		id   int64
		want int
	}{{id, 0}, {other, 1}} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE id = $1`, c.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("job %d: %d rows after the commit, want %d", c.id, n, c.want)
		}
	}
}
