package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

var _ checkpoint.Remover = (*Saver)(nil)

// RemoveCheckpoints removes the named checkpoints of ref's thread namespace,
// with their pending writes and the blobs no remaining checkpoint needs, in
// one transaction; see checkpoint.Remover. It locks the namespace's heads
// row first, as Prune does, and never removes the checkpoint it names as
// latest. A remaining checkpoint whose versions do not decode fails the
// call, which then removes nothing.
func (s *Saver) RemoveCheckpoints(ctx context.Context, ref checkpoint.Ref, ids []string) (int, error) {
	if run, err := savercheck.Remove(ctx, "checkpoint", ref, ref.ThreadID, errEmptyThread, ids); !run {
		return 0, err
	}
	removed := 0
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		removed = 0
		var latest string
		err := tx.QueryRow(ctx, `SELECT latest_id FROM checkpoint_heads WHERE thread = $1 AND ns = $2 FOR UPDATE`, ref.ThreadID, ref.Namespace).Scan(&latest)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		// Pending writes go with their checkpoints (ON DELETE CASCADE).
		tag, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE thread = $1 AND ns = $2 AND id = ANY($3) AND id <> $4`,
			ref.ThreadID, ref.Namespace, ids, latest)
		if err != nil {
			return err
		}
		removed = int(tag.RowsAffected())
		if removed == 0 {
			return nil
		}
		return collectBlobs(ctx, tx, map[nsKey]bool{{ref.ThreadID, ref.Namespace}: true})
	})
	if err != nil {
		var own *rowError
		if errors.As(err, &own) {
			return 0, own.err
		}
		return 0, fmt.Errorf("checkpoint: remove checkpoints of %s: %w", ref, err)
	}
	return removed, nil
}
