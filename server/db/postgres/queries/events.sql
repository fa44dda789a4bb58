-- Run events on PostgreSQL (see datasets.sql): reading and removing;
-- appending goes with the run's lease (events.go).

-- name: ReadEvents
-- The run's row comes with its events (one row with no event when there
-- are none): whether it exists, and its status as of the same read.
SELECT r.status, r.error, coalesce(e.seq, 0), coalesce(e.event, ''), e.data, coalesce(e.created_at, r.created_at)
FROM trellis_runs r LEFT JOIN (
	SELECT seq, event, data, created_at FROM trellis_run_events
	WHERE tenant = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4
) e ON true
WHERE r.tenant = $1 AND r.run_id = $2 ORDER BY e.seq

-- name: DeleteEvents
DELETE FROM trellis_run_events WHERE tenant = $1 AND run_id = $2

-- name: PruneEvents
DELETE FROM trellis_run_events e USING trellis_runs r
WHERE r.tenant = e.tenant AND r.run_id = e.run_id AND r.ended_at IS NOT NULL AND r.ended_at < $1
