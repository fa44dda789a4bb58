package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
)

var _ checkpoint.Exporter = (*Saver)(nil)

// Threads returns up to limit IDs of threads holding checkpoints, in
// ascending byte order, those after after; see checkpoint.Exporter.
func (s *Saver) Threads(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint: list threads: limit %d is not positive", limit)
	}
	ids, err := s.strings(ctx, `SELECT DISTINCT thread FROM checkpoints WHERE thread > $1 ORDER BY thread LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list threads after %q: %w", after, err)
	}
	return ids, nil
}

// Namespaces returns the namespaces of thread holding checkpoints, in
// ascending byte order; see checkpoint.Exporter.
func (s *Saver) Namespaces(ctx context.Context, thread string) ([]string, error) {
	nss, err := s.strings(ctx, `SELECT DISTINCT ns FROM checkpoints WHERE thread = $1 ORDER BY ns`, thread)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list the namespaces of %s: %w", checkpoint.Ref{ThreadID: thread}, err)
	}
	return nss, nil
}

// CheckpointIDs returns up to limit checkpoint IDs of ref's thread
// namespace after ref.ID, oldest first; see checkpoint.Exporter.
func (s *Saver) CheckpointIDs(ctx context.Context, ref checkpoint.Ref, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint: list the checkpoints of %s: limit %d is not positive", ref, limit)
	}
	ids, err := s.strings(ctx, `SELECT id FROM checkpoints WHERE thread = $1 AND ns = $2 AND id > $3 ORDER BY id LIMIT $4`,
		ref.ThreadID, ref.Namespace, ref.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list the checkpoints of %s: %w", ref, err)
	}
	return ids, nil
}

func (s *Saver) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
