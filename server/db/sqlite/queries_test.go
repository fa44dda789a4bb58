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
		// As written and as the store runs it (Rewrite).
		for _, q := range []string{text, (driver{}).Rewrite(text)} {
			st, err := d.sq.Write.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			if err := st.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// Rewrite makes numbered parameters plain only when that keeps the
// statement's meaning.
func TestRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT a FROM t WHERE x = ?1 AND y = ?2", "SELECT a FROM t WHERE x = ? AND y = ?"},
		{"UPDATE t SET a = ?1, b = ?1 WHERE c = ?2", "UPDATE t SET a = ?1, b = ?1 WHERE c = ?2"},
		{"SELECT ?2, ?1", "SELECT ?2, ?1"},
		{"SELECT '?3' , ?1 WHERE s = 'it''s'", "SELECT '?3' , ? WHERE s = 'it''s'"},
		{"SELECT ?", "SELECT ?"},
		{"SELECT 1", "SELECT 1"},
	} {
		if got := (driver{}).Rewrite(c.in); got != c.want {
			t.Errorf("Rewrite(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
