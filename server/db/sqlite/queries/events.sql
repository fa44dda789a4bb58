-- Run events on SQLite (see datasets.sql): reading and removing; appending
-- goes with the run's lease (events.go).

-- name: ReadEvents
SELECT seq, event, data, created_at FROM trellis_run_events
WHERE tenant = ?1 AND run_id = ?2 AND seq > ?3 ORDER BY seq LIMIT coalesce(?4, -1)

-- name: DeleteEvents
DELETE FROM trellis_run_events WHERE tenant = ?1 AND run_id = ?2

-- name: PruneEvents
DELETE FROM trellis_run_events WHERE (tenant, run_id) IN
	(SELECT tenant, run_id FROM trellis_runs WHERE ended_at IS NOT NULL AND ended_at < ?1)
