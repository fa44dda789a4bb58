-- Scheduled runs on SQLite (see datasets.sql).

-- name: GetCron
SELECT cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at
FROM trellis_crons WHERE tenant = ?1 AND cron_id = ?2

-- name: GetCronForUpdate
SELECT cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at
FROM trellis_crons WHERE tenant = ?1 AND cron_id = ?2

-- name: ThreadExists
SELECT 1 FROM trellis_threads WHERE tenant = ?1 AND thread_id = ?2

-- name: InsertCron
INSERT INTO trellis_crons (tenant, cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)
RETURNING cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at

-- name: UpdateCron
UPDATE trellis_crons SET schedule = ?1, timezone = ?2, payload = ?3, metadata = ?4,
	next_run_at = ?5, end_time = ?6, enabled = ?7, on_run_completed = ?8, updated_at = ?9
WHERE tenant = ?10 AND cron_id = ?11
RETURNING cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at

-- name: DeleteCron
DELETE FROM trellis_crons WHERE tenant = ?1 AND cron_id = ?2

-- name: SelectCrons
SELECT cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at
FROM trellis_crons

-- name: CountCrons
SELECT count(*) FROM trellis_crons

-- name: DueCrons
SELECT tenant, cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
	next_run_at, end_time, enabled, on_run_completed, created_at, updated_at
FROM trellis_crons
WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?1
ORDER BY next_run_at, tenant, cron_id LIMIT ?2

-- name: AdvanceCron
UPDATE trellis_crons SET next_run_at = ?1, updated_at = ?2
WHERE tenant = ?3 AND cron_id = ?4 AND enabled = 1 AND next_run_at = ?5
