package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
	"github.com/trellis-agents/trellis/server/db/postgres"
)

var ctx = context.Background()

// TestOneRunningRunIsASchemaRule: the partial unique index refuses a
// second running run of a thread even to a statement that bypasses
// ClaimRun.
func TestOneRunningRunIsASchemaRule(t *testing.T) {
	d := open(t)
	if _, err := d.CreateThread(ctx, "ten", db.Thread{ID: "t"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"a", "b"} {
		if _, err := d.CreateRun(ctx, "ten", db.Run{ID: r, ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Exec(`UPDATE trellis_runs SET status = 'running' WHERE tenant = 'ten' AND run_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	err := d.Exec(`UPDATE trellis_runs SET status = 'running' WHERE tenant = 'ten' AND run_id = 'b'`)
	if err == nil || !strings.Contains(err.Error(), "trellis_runs_one_running") {
		t.Errorf("a second running run of a thread was stored (error %v); the partial unique index is missing", err)
	}
}

// TestReplicasRaceToClaim: two DBs (two pools, as two replicas) on one
// schema race to claim two runs of each of several threads: each thread
// gets exactly one running run.
func TestReplicasRaceToClaim(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	var ds [2]*postgres.DB
	for i := range ds {
		d, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		ds[i] = d
	}
	for round := range 10 {
		th := string(rune('a' + round))
		if _, err := ds[0].CreateThread(ctx, "ten", db.Thread{ID: th}, db.IfExistsRaise); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := ds[1].CreateRun(ctx, "ten", db.Run{ID: th + string(rune('0'+i)), ThreadID: th}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = ds[i].ClaimRun(ctx, "ten", th+string(rune('0'+i)), "w", time.Minute)
			}()
		}
		wg.Wait()
		ok, busy := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, db.ErrBusy):
				busy++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 || busy != 1 {
			t.Fatalf("round %d: %d won, %d busy (%v); want one each", round, ok, busy, errs)
		}
	}
}

// TestOpenErrors: a bad URL, an unreachable server and a schema from a
// newer Trellis are refused with errors that say so.
func TestOpenErrors(t *testing.T) {
	if _, err := postgres.Open(ctx, "postgres://%zz"); err == nil || !strings.Contains(err.Error(), "check the URL") {
		t.Errorf("Open of a malformed URL = %v, want an error telling to check the URL", err)
	}
	dsn, schema := pgdbtest.Schema(t)
	d, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := d.Exec(`INSERT INTO schema_migrations (component, version) VALUES ($1, 99)`, postgres.Component); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema)); !errors.Is(err, pgdb.ErrSchemaTooNew) {
		t.Errorf("Open of a schema from a newer Trellis = %v, want ErrSchemaTooNew", err)
	}
}

// TestContainmentAgreesWithGo: PostgreSQL's @> gives the answer the
// SQLite store's Go matcher is tested for, on every shared case.
func TestContainmentAgreesWithGo(t *testing.T) {
	d := open(t)
	for _, c := range dbutil.ContainmentCases {
		var got bool
		if err := d.QueryRow(`SELECT $1::jsonb @> $2::jsonb`, &got, c.Doc, c.Filter); err != nil {
			t.Fatalf("%s @> %s: %v", c.Doc, c.Filter, err)
		}
		if got != c.Want {
			t.Errorf("PostgreSQL: %s @> %s = %v, the shared case says %v", c.Doc, c.Filter, got, c.Want)
		}
	}
}
