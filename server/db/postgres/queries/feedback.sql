-- Run feedback on PostgreSQL (see datasets.sql).

-- name: RunExists
SELECT 1 FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND $3 IN ('', thread_id)

-- name: RunExistsForUpdate
SELECT 1 FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND $3 IN ('', thread_id)
FOR UPDATE

-- name: CountFeedback
SELECT count(*) FROM trellis_run_feedback WHERE tenant = $1 AND run_id = $2

-- name: InsertFeedback
INSERT INTO trellis_run_feedback (tenant, feedback_id, thread_id, run_id, key, score, value, comment, correction, message_id, created_at, source)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9::jsonb, $10, $11, $12)
RETURNING feedback_id, thread_id, run_id, key, score::text, value::text, comment, correction::text, message_id, created_at, source

-- name: ListFeedback
SELECT feedback_id, thread_id, run_id, key, score::text, value::text, comment, correction::text, message_id, created_at, source
FROM trellis_run_feedback WHERE tenant = $1 AND run_id = $2
ORDER BY created_at, feedback_id

-- name: DeleteFeedback
DELETE FROM trellis_run_feedback WHERE tenant = $1 AND thread_id = $2 AND run_id = $3 AND feedback_id = $4
