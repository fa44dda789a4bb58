package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

var _ checkpoint.Remover = (*Saver)(nil)

// RemoveCheckpoints removes the named checkpoints of ref's thread namespace,
// with their pending writes (ON DELETE CASCADE) and the blobs no remaining
// checkpoint needs, in one transaction; the namespace's latest checkpoint
// is never removed. See checkpoint.Remover. A remaining checkpoint that does
// not decode fails the call, which then removes nothing.
func (s *Saver) RemoveCheckpoints(ctx context.Context, ref checkpoint.Ref, ids []string) (int, error) {
	if run, err := savercheck.Remove(ctx, "checkpoint", ref, ref.ThreadID, errEmptyThread, ids); !run {
		return 0, err
	}
	removed := 0
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		removed = 0
		var latest sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM checkpoints WHERE thread = ? AND ns = ?`, ref.ThreadID, ref.Namespace).Scan(&latest); err != nil {
			return err
		}
		if !latest.Valid {
			return nil
		}
		del, err := tx.PrepareContext(ctx, `DELETE FROM checkpoints WHERE thread = ? AND ns = ? AND id = ? AND id <> ?`)
		if err != nil {
			return err
		}
		defer del.Close()
		for _, id := range ids {
			res, err := del.ExecContext(ctx, ref.ThreadID, ref.Namespace, id, latest.String)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			removed += int(n)
		}
		if removed == 0 {
			return nil
		}
		return collectBlobs(ctx, tx, ref.ThreadID, ref.Namespace)
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: remove checkpoints of %s: %w", ref, err)
	}
	return removed, nil
}
