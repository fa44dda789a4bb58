package postgres

import (
	"context"
	"testing"

	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// TestQueriesPrepare prepares every statement of the query files against
// the migrated schema: none names a column or table that is not there or
// leaves a parameter's type unknown, even one the suite does not reach.
func TestQueriesPrepare(t *testing.T) {
	ctx := context.Background()
	d, _, _ := OpenSeeded(t, 0)
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	err = sqlcore.PrepareAll(queryFiles, sqlcore.Pattern, func(text string) error {
		_, err := conn.Conn().Prepare(ctx, "", text)
		return err
	})
	if err != nil {
		t.Error(err)
	}
}
