package postgres

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// TestQueriesPrepare prepares every statement of the query files against
// the migrated schema, so a statement the conformance suite does not reach
// still cannot name a column or table that is not there, or leave a
// parameter's type unknown.
func TestQueriesPrepare(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	d, err := Open(ctx, dsn, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q, err := sqlcore.Load(queryFiles, "queries/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for name, text := range q.All() {
		if _, err := conn.Conn().Prepare(ctx, "", text); err != nil {
			t.Errorf("%s: %v\n%s", name, err, text)
		}
	}
}
