package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// TestQueriesPrepare prepares every statement of the query files against
// the migrated schema, so a statement the conformance suite does not reach
// still cannot name a column or table that is not there.
func TestQueriesPrepare(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = sqlcore.PrepareAll(queryFiles, sqlcore.Pattern, func(text string) error {
		st, err := d.sq.Write.PrepareContext(ctx, text)
		if err == nil {
			err = st.Close()
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}
