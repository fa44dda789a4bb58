-- Threads on PostgreSQL (see datasets.sql). Every activity moves a thread's
-- expiry to its TTL after now.

-- name: GetThread
SELECT thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at
FROM trellis_threads WHERE tenant = $1 AND thread_id = $2

-- name: GetThreadForRun
SELECT t.thread_id, t.status, t.metadata, t.thread_values, t.interrupts, t.error, t.created_at, t.updated_at,
	t.ttl_us, t.ttl_strategy, t.expires_at,
	(SELECT r.assistant_id FROM trellis_runs r WHERE r.tenant = $1 AND r.thread_id = $2 ORDER BY r.seq DESC LIMIT 1),
	(SELECT r.assistant_version FROM trellis_runs r WHERE r.tenant = $1 AND r.thread_id = $2 ORDER BY r.seq DESC LIMIT 1),
	EXISTS (SELECT 1 FROM trellis_runs r WHERE r.tenant = $1 AND r.thread_id = $2 AND r.status IN ('pending', 'running'))
FROM trellis_threads t WHERE t.tenant = $1 AND t.thread_id = $2

-- name: InsertThread
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $8, $9, $10, $11)
ON CONFLICT DO NOTHING

-- name: CreateThread
-- InsertThread returning the thread as stored (no row when the ID is taken).
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $8, $9, $10, $11)
ON CONFLICT DO NOTHING
RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at

-- name: TagThread
-- graph_id and assistant_id set, the other keys kept (db.TxThreadTagger).
UPDATE trellis_threads SET metadata = metadata || jsonb_build_object('graph_id', $1::text, 'assistant_id', $2::text), updated_at = $3,
	expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $3::timestamptz + ttl_us * interval '1 microsecond' END
WHERE tenant = $4 AND thread_id = $5

-- name: UpdateThreadMetadata
UPDATE trellis_threads SET metadata = metadata || $1::jsonb, updated_at = $2, expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $2::timestamptz + ttl_us * interval '1 microsecond' END
WHERE tenant = $3 AND thread_id = $4

-- name: SetThreadResult
UPDATE trellis_threads SET status = $1, error = $2,
	metadata = CASE WHEN $9 = '' OR metadata->'title' IS NOT NULL THEN metadata ELSE metadata || jsonb_build_object('title', $9::text) END,
	thread_values = CASE WHEN $3 THEN $4::jsonb ELSE thread_values END,
	interrupts = coalesce($5::jsonb, interrupts), updated_at = $6, expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $6::timestamptz + ttl_us * interval '1 microsecond' END
WHERE tenant = $7 AND thread_id = $8
RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at

-- name: DeleteThread
DELETE FROM trellis_threads WHERE tenant = $1 AND thread_id = $2

-- name: SelectThreads
SELECT thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at
FROM trellis_threads

-- name: CountThreads
SELECT count(*) FROM trellis_threads

-- name: CopyThread
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
SELECT tenant, $1, status, metadata, thread_values, interrupts, error, $2, $2, ttl_us, ttl_strategy, $2::timestamptz + ttl_us * interval '1 microsecond'
FROM trellis_threads WHERE tenant = $3 AND thread_id = $4
ON CONFLICT DO NOTHING

-- name: CopyCheckpointMetadata
INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at)
SELECT tenant, $1, checkpoint_id, metadata, updated_at FROM trellis_checkpoint_metadata
WHERE tenant = $2 AND thread_id = $3

-- name: SetThreadTTL
UPDATE trellis_threads SET ttl_us = $1, ttl_strategy = $2, updated_at = $3, expires_at = $4
WHERE tenant = $5 AND thread_id = $6

-- name: ExpiredThreads
SELECT t.tenant, t.thread_id, t.ttl_strategy FROM trellis_threads t
WHERE t.expires_at IS NOT NULL AND t.expires_at <= $1 AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))
ORDER BY t.expires_at, t.tenant, t.thread_id LIMIT $2

-- name: ExpiredThread
SELECT t.ttl_strategy FROM trellis_threads t
WHERE t.tenant = $2 AND t.thread_id = $3 AND t.expires_at IS NOT NULL AND t.expires_at <= $1 AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))
FOR UPDATE

-- name: KeepExpiredThread
UPDATE trellis_threads SET expires_at = NULL WHERE tenant = $1 AND thread_id = $2
