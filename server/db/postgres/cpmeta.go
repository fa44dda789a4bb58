package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// PatchCheckpointMetadata merges md into the overlay of the thread's
// checkpoint (jsonb ||: top-level keys replace).
func (d *DB) PatchCheckpointMetadata(ctx context.Context, tenant, threadID, checkpointID string, md db.Metadata) (db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	if checkpointID == "" {
		return nil, dbutil.Invalid("the checkpoint ID is empty")
	}
	b, err := dbutil.EncodeMetadata(md)
	if err != nil {
		return nil, err
	}
	var out db.Metadata
	err = d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getThread(ctx, tx, tenant, threadID); err != nil {
			return err
		}
		var raw []byte
		err := tx.QueryRow(ctx, `INSERT INTO trellis_checkpoint_metadata AS m (tenant, thread_id, checkpoint_id, metadata, updated_at)
			VALUES ($1, $2, $3, $4::jsonb, $5)
			ON CONFLICT (tenant, thread_id, checkpoint_id) DO UPDATE SET metadata = m.metadata || excluded.metadata, updated_at = excluded.updated_at
			RETURNING metadata::text`, tenant, threadID, checkpointID, b, dbutil.Now()).Scan(&raw)
		if err != nil {
			return wrap(err, "patch the metadata of checkpoint %q", checkpointID)
		}
		out, err = dbutil.DecodeMetadata(raw)
		return wrap(err, "checkpoint %q", checkpointID)
	})
	return out, err
}

// CheckpointMetadata returns the thread's checkpoint metadata overlays.
func (d *DB) CheckpointMetadata(ctx context.Context, tenant, threadID string) (map[string]db.Metadata, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	out := map[string]db.Metadata{}
	err := d.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT checkpoint_id, metadata::text FROM trellis_checkpoint_metadata WHERE tenant = $1 AND thread_id = $2`, tenant, threadID)
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
