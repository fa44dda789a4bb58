package postgres

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// tenantScan reports the statements that read every row of a tenant, or
// of a table, by design: the lists, searches and counts (paged and
// filtered in SQL), and the sweeps.
func tenantScan(name string) bool {
	for _, p := range []string{"Search", "Select", "Count", "List", "Expired", "Prune", "PendingThreads", "ImportedRuns"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// wholeScan is a plan node that reads a table of the run path whole or by
// tenant: a sequential scan, an index scan whose only condition is the
// tenant, or one that filters the row's key instead of seeking it.
var wholeScan = regexp.MustCompile(`Seq Scan on trellis_|Index Cond: \(tenant = \(?\$\d+\)?(::text)?\)\n|Filter: \((thread_id|run_id|assistant_id) = `)

// TestGenericPlans: the generic plan of every statement of the query files
// but the searches (the one each connection keeps, pgdb.PlanCacheMode),
// planned on tables holding a few runs of one tenant and never analyzed,
// reads no table whole nor all of a tenant's rows: each seeks its key.
func TestGenericPlans(t *testing.T) {
	ctx := context.Background()
	d, _, _ := OpenSeeded(t, 20)
	q, err := sqlcore.Load(queryFiles, sqlcore.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var mode string
	if err := conn.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != pgdb.PlanCacheMode {
		t.Errorf("plan_cache_mode = %q, want %q", mode, pgdb.PlanCacheMode)
	}
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for name, text := range q.All() {
		if tenantScan(name) {
			continue
		}
		seen++
		sd, err := conn.Conn().Prepare(ctx, "generic_"+strings.ToLower(name), text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// A generic plan does not depend on the parameters' values.
		args := ""
		if n := len(sd.ParamOIDs); n > 0 {
			args = "(" + strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ") + ")"
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+sd.Name+args, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := strings.Join(lines, "\n") + "\n"
		if testing.Verbose() {
			t.Logf("%s:\n%s", name, plan)
		}
		if wholeScan.MatchString(plan) {
			t.Errorf("%s: the generic plan reads a table whole:\n%s", name, plan)
		}
	}
	if seen < 80 {
		t.Errorf("checked the plans of %d statements; the query files hold more", seen)
	}
}
