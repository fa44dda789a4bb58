package pgdb_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/internal/sqltrace"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func connect(t *testing.T, dsn, schema string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Connect(context.Background(), dsn, schema)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func versions(t *testing.T, pool *pgxpool.Pool, component string) []int {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT version FROM schema_migrations WHERE component = $1 ORDER BY version`, component)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestConnectCreatesSchema(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	// A schema that does not exist yet, with a name that needs quoting.
	name := schema[:min(len(schema), 50)] + ` "x" Y`
	pool := connect(t, dsn, name)
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	})
	var current string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != name {
		t.Errorf("current_schema() = %q, want %q", current, name)
	}
	// Connecting again to the existing schema works.
	connect(t, dsn, name)

	for _, bad := range []string{strings.Repeat("s", 64), "a\x00b"} {
		if p, err := pgdb.Connect(ctx, dsn, bad); err == nil {
			p.Close()
			t.Errorf("Connect with schema %q succeeded", bad)
		}
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	pool := connect(t, dsn, schema)
	v1 := []string{`CREATE TABLE a (x int); CREATE TABLE b (y int)`}
	if err := pgdb.Migrate(ctx, pool, "comp", v1); err != nil {
		t.Fatal(err)
	}
	if err := pgdb.Migrate(ctx, pool, "comp", v1); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	// Another component keeps its own versions.
	if err := pgdb.Migrate(ctx, pool, "other", []string{`CREATE TABLE c (z int)`}); err != nil {
		t.Fatal(err)
	}

	// Version 3 fails: version 2 stays applied, version 3 leaves nothing.
	v3 := append(v1, `ALTER TABLE a ADD COLUMN w int`, `CREATE TABLE d (q int); SELECT 1/0`)
	if err := pgdb.Migrate(ctx, pool, "comp", v3); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("Migrate with a failing version 3: error = %v", err)
	}
	if got := versions(t, pool, "comp"); len(got) != 2 || got[1] != 2 {
		t.Errorf("versions after the failure = %v, want [1 2]", got)
	}
	var d *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('d')::text`).Scan(&d); err != nil || d != nil {
		t.Errorf("table of the failed migration: %v, %v; want none", d, err)
	}
	v3[2] = `CREATE TABLE d (q int)`
	if err := pgdb.Migrate(ctx, pool, "comp", v3); err != nil {
		t.Fatalf("Migrate with version 3 fixed: %v", err)
	}
	if got := versions(t, pool, "comp"); len(got) != 3 {
		t.Errorf("versions = %v, want [1 2 3]", got)
	}

	// Code that knows fewer versions than the database refuses it.
	err := pgdb.Migrate(ctx, pool, "comp", v1)
	if !errors.Is(err, pgdb.ErrSchemaTooNew) || !strings.Contains(err.Error(), "version 3") || !strings.Contains(err.Error(), schema) {
		t.Errorf("Migrate with older code: error = %v, want ErrSchemaTooNew naming version 3 and the schema", err)
	}
	if err := pgdb.Migrate(ctx, pool, "", v1); err == nil {
		t.Error("Migrate without a component name succeeded")
	}
}

// TestMigrateConcurrently starts several "processes" at once: each
// migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	migrations := []string{`CREATE TABLE n (i int)`, `INSERT INTO n VALUES (1)`, `INSERT INTO n VALUES (2)`}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		pool := connect(t, dsn, schema)
		wg.Go(func() { errs[i] = pgdb.Migrate(ctx, pool, "race", migrations) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	pool := connect(t, dsn, schema)
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM n`).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows inserted by migrations = %d (%v), want 2", n, err)
	}
}

func TestMigrateWithoutSchema(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema + "_missing"}.Sanitize()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	err = pgdb.Migrate(context.Background(), pool, "comp", []string{`CREATE TABLE a (x int)`})
	if err == nil || !strings.Contains(err.Error(), "search_path") {
		t.Errorf("Migrate with a search_path naming no schema: error = %v", err)
	}
}

// The tracer counts the write of a data-modifying WITH query under an
// outer SELECT, whose command tag says SELECT.
func TestTraceCountsWritesInWith(t *testing.T) {
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	dsn, schema := pgdbtest.Schema(t)
	pool := connect(t, dsn, schema)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE jobs (id int PRIMARY KEY, state text); INSERT INTO jobs VALUES (1, 'running')`); err != nil {
		t.Fatal(err)
	}
	rec.Take()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `WITH done AS (UPDATE jobs SET state = 'completed' WHERE id = $1 RETURNING id) SELECT id FROM done`, 1)
		_, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := sqltrace.Summarize(rec.Take(), nil).WriteTx; n != 1 {
		t.Errorf("a transaction completing a job through WITH ... SELECT: %d write transactions counted, want 1", n)
	}
}

// TestConnectPlansOnce: the pool's connections keep one generic plan per
// prepared statement instead of planning it again at every execution,
// unless the connection string chooses otherwise.
func TestConnectPlansOnce(t *testing.T) {
	dsn, schema := pgdbtest.Schema(t)
	mode := func(pool *pgxpool.Pool) string {
		var m string
		if err := pool.QueryRow(context.Background(), `SHOW plan_cache_mode`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if got := mode(connect(t, dsn, schema)); got != pgdb.PlanCacheMode {
		t.Errorf("plan_cache_mode = %q, want %q", got, pgdb.PlanCacheMode)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	if got := mode(connect(t, dsn+sep+"plan_cache_mode=auto", schema)); got != "auto" {
		t.Errorf("with plan_cache_mode=auto in the URL: plan_cache_mode = %q, want auto", got)
	}
}
