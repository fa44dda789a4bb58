-- Checkpoint metadata overlays on PostgreSQL (see datasets.sql). A patch
-- is merged in SQL (jsonb ||: top-level keys replace).

-- name: GetCheckpointMetadata
SELECT metadata::text FROM trellis_checkpoint_metadata WHERE tenant = $1 AND thread_id = $2 AND checkpoint_id = $3

-- name: PatchCheckpointMetadata
INSERT INTO trellis_checkpoint_metadata AS m (tenant, thread_id, checkpoint_id, metadata, updated_at)
VALUES ($1, $2, $3, $4::jsonb, $5)
ON CONFLICT (tenant, thread_id, checkpoint_id) DO UPDATE SET metadata = m.metadata || excluded.metadata, updated_at = excluded.updated_at
RETURNING metadata::text

-- name: CheckpointMetadata
SELECT checkpoint_id, metadata::text FROM trellis_checkpoint_metadata WHERE tenant = $1 AND thread_id = $2
