package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
)

var _ checkpoint.Exporter = (*Saver)(nil)

// Threads returns up to limit IDs of threads holding checkpoints, in
// ascending byte order, those after after; see checkpoint.Exporter.
func (s *Saver) Threads(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint: list threads: limit %d is not positive", limit)
	}
	ids, err := queryStrings(ctx, s.db.Read, `SELECT DISTINCT thread FROM checkpoints WHERE thread > ? ORDER BY thread LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list threads after %q: %w", after, err)
	}
	return ids, nil
}

// Namespaces returns the namespaces of thread holding checkpoints, in
// ascending byte order; see checkpoint.Exporter.
func (s *Saver) Namespaces(ctx context.Context, thread string) ([]string, error) {
	nss, err := queryStrings(ctx, s.db.Read, `SELECT DISTINCT ns FROM checkpoints WHERE thread = ? ORDER BY ns`, thread)
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
	ids, err := queryStrings(ctx, s.db.Read, `SELECT id FROM checkpoints WHERE thread = ? AND ns = ? AND id > ? ORDER BY id LIMIT ?`,
		ref.ThreadID, ref.Namespace, ref.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list the checkpoints of %s: %w", ref, err)
	}
	return ids, nil
}

func queryStrings(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}
