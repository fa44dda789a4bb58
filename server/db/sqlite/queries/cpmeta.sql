-- Checkpoint metadata overlays on SQLite (see datasets.sql). The store
-- merges a patch in Go; PatchCheckpointMetadata gets the merged document.

-- name: GetCheckpointMetadata
SELECT metadata FROM trellis_checkpoint_metadata WHERE tenant = ?1 AND thread_id = ?2 AND checkpoint_id = ?3

-- name: PatchCheckpointMetadata
INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (tenant, thread_id, checkpoint_id) DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at
RETURNING metadata

-- name: CheckpointMetadata
SELECT checkpoint_id, metadata FROM trellis_checkpoint_metadata WHERE tenant = ?1 AND thread_id = ?2
