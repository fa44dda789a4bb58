-- Threads on SQLite (see datasets.sql). Every activity moves a thread's
-- expiry to its TTL after now.

-- name: GetThread
SELECT thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at
FROM trellis_threads WHERE tenant = ?1 AND thread_id = ?2

-- name: GetThreadForRun
-- INDEXED BY: the planner would otherwise search the runs' primary key
-- by tenant alone.
SELECT t.thread_id, t.status, t.metadata, t.thread_values, t.interrupts, t.error, t.created_at, t.updated_at,
	t.ttl_us, t.ttl_strategy, t.expires_at,
	(SELECT r.assistant_id FROM trellis_runs r WHERE r.tenant = ?1 AND r.thread_id = ?2 ORDER BY r.seq DESC LIMIT 1),
	(SELECT r.assistant_version FROM trellis_runs r WHERE r.tenant = ?1 AND r.thread_id = ?2 ORDER BY r.seq DESC LIMIT 1),
	EXISTS (SELECT 1 FROM trellis_runs r INDEXED BY trellis_runs_thread
		WHERE r.tenant = ?1 AND r.thread_id = ?2 AND r.status IN ('pending', 'running'))
FROM trellis_threads t WHERE t.tenant = ?1 AND t.thread_id = ?2

-- name: InsertThread
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11)
ON CONFLICT DO NOTHING

-- name: CreateThread
-- InsertThread returning the thread as stored (no row when the ID is taken).
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11)
ON CONFLICT DO NOTHING
RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at

-- name: UpdateThreadMetadata
UPDATE trellis_threads SET metadata = ?1, updated_at = ?2, expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ?2 + ttl_us END
WHERE tenant = ?3 AND thread_id = ?4

-- name: TagThread
-- graph_id and assistant_id set, the other keys kept (db.TxThreadTagger).
UPDATE trellis_threads SET metadata = json_set(metadata, '$.graph_id', ?1, '$.assistant_id', ?2), updated_at = ?3,
	expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ?3 + ttl_us END
WHERE tenant = ?4 AND thread_id = ?5

-- name: SetThreadResult
UPDATE trellis_threads SET status = ?1, error = ?2,
	metadata = CASE WHEN ?9 = '' OR json_type(metadata, '$.title') IS NOT NULL THEN metadata ELSE json_set(metadata, '$.title', ?9) END,
	thread_values = CASE WHEN ?3 THEN ?4 ELSE thread_values END,
	interrupts = coalesce(?5, interrupts), updated_at = ?6, expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ?6 + ttl_us END
WHERE tenant = ?7 AND thread_id = ?8
RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at

-- name: SetThreadResultPending
-- SetThreadResult for a run's finish, with PendingAfter's two columns
-- after the thread's (?6 is now): SQLite's writers take turns, so no run
-- of the thread is accepted between this read and the commit.
UPDATE trellis_threads SET status = ?1, error = ?2,
	metadata = CASE WHEN ?9 = '' OR json_type(metadata, '$.title') IS NOT NULL THEN metadata ELSE json_set(metadata, '$.title', ?9) END,
	thread_values = CASE WHEN ?3 THEN ?4 ELSE thread_values END,
	interrupts = coalesce(?5, interrupts), updated_at = ?6, expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ?6 + ttl_us END
WHERE tenant = ?7 AND thread_id = ?8
RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at,
	(SELECT coalesce(max(r.not_before IS NULL OR r.not_before <= ?6), 0) FROM trellis_runs AS r INDEXED BY trellis_runs_thread
		WHERE r.tenant = ?7 AND r.thread_id = ?8 AND r.status = 'pending'),
	(SELECT min(CASE WHEN r.not_before > ?6 THEN r.not_before END) FROM trellis_runs AS r INDEXED BY trellis_runs_thread
		WHERE r.tenant = ?7 AND r.thread_id = ?8 AND r.status = 'pending')

-- name: DeleteThread
DELETE FROM trellis_threads WHERE tenant = ?1 AND thread_id = ?2

-- name: SelectThreads
SELECT thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at
FROM trellis_threads

-- name: CountThreads
SELECT count(*) FROM trellis_threads

-- name: CopyThread
INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
	ttl_us, ttl_strategy, expires_at)
SELECT tenant, ?1, status, metadata, thread_values, interrupts, error, ?2, ?2, ttl_us, ttl_strategy, ?2 + ttl_us
FROM trellis_threads WHERE tenant = ?3 AND thread_id = ?4
ON CONFLICT DO NOTHING

-- name: CopyCheckpointMetadata
INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at)
SELECT tenant, ?1, checkpoint_id, metadata, updated_at FROM trellis_checkpoint_metadata
WHERE tenant = ?2 AND thread_id = ?3

-- name: SetThreadTTL
UPDATE trellis_threads SET ttl_us = ?1, ttl_strategy = ?2, updated_at = ?3, expires_at = ?4
WHERE tenant = ?5 AND thread_id = ?6

-- name: ExpiredThreads
SELECT t.tenant, t.thread_id, t.ttl_strategy FROM trellis_threads t
WHERE t.expires_at IS NOT NULL AND t.expires_at <= ?1 AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))
ORDER BY t.expires_at, t.tenant, t.thread_id LIMIT ?2

-- name: ExpiredThread
SELECT t.ttl_strategy FROM trellis_threads t
WHERE t.tenant = ?2 AND t.thread_id = ?3 AND t.expires_at IS NOT NULL AND t.expires_at <= ?1 AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))

-- name: KeepExpiredThread
UPDATE trellis_threads SET expires_at = NULL WHERE tenant = ?1 AND thread_id = ?2
