package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db/postgres"
)

// TestNoSecondaryIndexLeadsWithTenant: no full index of the tables a run
// goes through, other than their primary keys, has tenant as its first
// column. Such an index lets the planner answer a primary-key lookup with
// tenant as the only index condition, filtering every row of the tenant
// (migration 6). A partial index (one running run of a thread) holds few
// rows and is left out; the tables off the run's path are not checked.
func TestNoSecondaryIndexLeadsWithTenant(t *testing.T) {
	d := open(t)
	var bad string
	err := d.QueryRow(`SELECT coalesce(string_agg(i.relname, ', ' ORDER BY i.relname), '')
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class c ON c.oid = x.indrelid
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relname IN ('trellis_assistants', 'trellis_threads', 'trellis_runs', 'trellis_crons')
			AND x.indpred IS NULL
			AND NOT x.indisprimary AND a.attname = 'tenant'`, &bad)
	if err != nil {
		t.Fatal(err)
	}
	if bad != "" {
		t.Errorf("secondary indexes leading with tenant: %s", bad)
	}
}

// TestKeyLookupsUseThePrimaryKey: the generic plans of a run's hot
// lookups by key (as a connection caches them after five executions, here
// forced) scan the primary key with the whole key as the index condition,
// on a schema holding runs of one tenant and never analyzed.
func TestKeyLookupsUseThePrimaryKey(t *testing.T) {
	_, dsn, schema := postgres.OpenSeeded(t, 20)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	for _, s := range []string{
		"SET search_path = " + pgx.Identifier{schema}.Sanitize(),
		"SET plan_cache_mode = force_generic_plan",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct{ sql, index string }{
		// The foreign keys' checks (an event's run, a run's thread).
		{`SELECT 1 FROM ONLY trellis_runs x WHERE tenant = $1 AND run_id = $2 FOR KEY SHARE OF x`, "trellis_runs_pkey"},
		{`SELECT 1 FROM ONLY trellis_threads x WHERE tenant = $1 AND thread_id = $2 FOR KEY SHARE OF x`, "trellis_threads_pkey"},
		{`UPDATE trellis_runs SET event_seq = event_seq + 1 WHERE tenant = $1 AND run_id = $2`, "trellis_runs_pkey"},
		{`UPDATE trellis_runs SET status = 'running' WHERE tenant = $1 AND run_id = $2 AND status = 'pending'`, "trellis_runs_pkey"},
		{`UPDATE trellis_threads SET status = 'busy' WHERE tenant = $1 AND thread_id = $2`, "trellis_threads_pkey"},
		{`SELECT thread_id FROM trellis_threads WHERE tenant = $1 AND thread_id = $2`, "trellis_threads_pkey"},
	} {
		name := fmt.Sprintf("q%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+c.sql); err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"('default', 'x')", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "using "+c.index) || strings.Contains(plan, "Filter: (run_id") || strings.Contains(plan, "Filter: (thread_id") {
			t.Errorf("%s\nplanned as:\n%s\nwant an index scan of %s on the whole key", c.sql, plan, c.index)
		}
	}
}
