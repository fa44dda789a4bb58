package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// PatchCheckpointMetadata merges md into the overlay of the thread's
// checkpoint.
func (d *DB) PatchCheckpointMetadata(ctx context.Context, tenant, threadID, checkpointID string, md db.Metadata) (db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	if checkpointID == "" {
		return nil, dbutil.Invalid("the checkpoint ID is empty")
	}
	var out db.Metadata
	err := d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getThread(ctx, tx, tenant, threadID); err != nil {
			return err
		}
		var old db.Metadata
		var raw []byte
		err := tx.QueryRowContext(ctx, `SELECT metadata FROM trellis_checkpoint_metadata WHERE tenant = ? AND thread_id = ? AND checkpoint_id = ?`,
			tenant, threadID, checkpointID).Scan(&raw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return wrap(err, "read the metadata of checkpoint %q", checkpointID)
		default:
			if old, err = dbutil.DecodeMetadata(raw); err != nil {
				return wrap(err, "checkpoint %q", checkpointID)
			}
		}
		out = dbutil.Merge(old, md)
		b, err := dbutil.EncodeMetadata(out)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, thread_id, checkpoint_id) DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at`,
			tenant, threadID, checkpointID, b, micros(dbutil.Now()))
		return wrap(err, "patch the metadata of checkpoint %q", checkpointID)
	})
	return out, err
}

// CheckpointMetadata returns the thread's checkpoint metadata overlays.
func (d *DB) CheckpointMetadata(ctx context.Context, tenant, threadID string) (map[string]db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	out := map[string]db.Metadata{}
	err := d.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT checkpoint_id, metadata FROM trellis_checkpoint_metadata WHERE tenant = ? AND thread_id = ?`, tenant, threadID)
		if err != nil {
			return wrap(err, "read the checkpoint metadata of thread %q", threadID)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var raw []byte
			if err := rows.Scan(&id, &raw); err != nil {
				return wrap(err, "read the checkpoint metadata of thread %q", threadID)
			}
			md, err := dbutil.DecodeMetadata(raw)
			if err != nil {
				return wrap(err, "checkpoint %q", id)
			}
			out[id] = md
		}
		return wrap(rows.Err(), "read the checkpoint metadata of thread %q", threadID)
	})
	return out, err
}
