-- Runs, leases and their events on SQLite (see datasets.sql). A run's
-- lease is on its row: lease_owner and lease_expires_at (both NULL when
-- no lease holds the run) and lease_token. Writes go through the file's
-- single write connection (BEGIN IMMEDIATE), so no statement here locks
-- rows: a read-check-write transaction cannot be interleaved with
-- another writer. For the same reason there is no
-- LockRunSlots: a count of running runs holds until the commit. Nor is
-- there an ImportedRuns: seq is a plain column, imported as it is.

-- name: GetRun
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = ?1 AND run_id = ?2 AND ?3 IN ('', thread_id)

-- name: GetRunForUpdate
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = ?1 AND run_id = ?2 AND ?3 IN ('', thread_id)

-- name: SelectRuns
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs

-- name: LockRunThread
SELECT 1 FROM trellis_threads WHERE tenant = ?1 AND thread_id = ?2

-- name: InsertRun
INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, seq, lease_token, event_seq,
	lease_owner, lease_expires_at)
VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, NULL, '', ?8, ?8, ?9, '', ?10,
	(SELECT coalesce(max(seq), 0) + 1 FROM trellis_runs WHERE tenant = ?1 AND thread_id = ?3), 0, 0, ?11, ?12)
ON CONFLICT DO NOTHING
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version

-- name: InsertRunOnThread
-- LockRunThread and InsertRun as one statement: the run is inserted from
-- its thread's row, so only when the thread exists (writers take turns on
-- SQLite: no delete can come between). It returns InsertRun's columns,
-- true (the thread was found), true (the run stored) and whether the
-- thread has an expiry for ExtendThreadExpiry to move; no row when
-- nothing was stored, and the caller reads LockRunThread to say why.
INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, seq, lease_token, event_seq,
	lease_owner, lease_expires_at)
SELECT ?1, ?2, t.thread_id, ?4, 'pending', ?5, ?6, ?7, NULL, '', ?8, ?8, ?9, '', ?10,
	(SELECT coalesce(max(seq), 0) + 1 FROM trellis_runs WHERE tenant = ?1 AND thread_id = ?3), 0, 0, ?11, ?12
FROM trellis_threads t WHERE t.tenant = ?1 AND t.thread_id = ?3
ON CONFLICT DO NOTHING
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, 1, 1,
	(SELECT ttl_us IS NOT NULL OR expires_at IS NOT NULL FROM trellis_threads WHERE tenant = ?1 AND thread_id = ?3)

-- name: ExtendThreadExpiry
UPDATE trellis_threads SET expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ?1 + ttl_us END
WHERE tenant = ?2 AND thread_id = ?3

-- name: ListRuns
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = ?1 AND thread_id = ?2 AND ?3 IN ('', status)
ORDER BY seq DESC LIMIT ?4 OFFSET ?5

-- name: DeleteRun
DELETE FROM trellis_runs WHERE tenant = ?1 AND run_id = ?2

-- name: NextPending
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs
WHERE tenant = ?1 AND thread_id = ?2 AND status = 'pending' AND (not_before IS NULL OR not_before <= ?3)
ORDER BY seq LIMIT 1

-- name: NextPendingRun
SELECT r.run_id, r.thread_id, r.assistant_id, r.status, r.metadata, r.kwargs, r.multitask_strategy, r.usage, r.error,
	r.created_at, r.updated_at, r.not_before, r.cancel_requested, r.assistant_version,
	EXISTS (SELECT 1 FROM trellis_runs x WHERE x.tenant = ?1 AND x.thread_id = ?2 AND x.status = 'running'),
	coalesce(a.assistant_id, ''), coalesce(a.graph_id, ''), coalesce(a.name, ''), coalesce(a.description, ''),
	a.config, a.context, a.metadata, coalesce(a.version, 0), coalesce(a.created_at, r.created_at), coalesce(a.updated_at, r.created_at)
FROM trellis_runs r LEFT JOIN trellis_assistants a ON a.tenant = r.tenant AND a.assistant_id = r.assistant_id
WHERE r.tenant = ?1 AND r.thread_id = ?2 AND r.status = 'pending' AND (r.not_before IS NULL OR r.not_before <= ?3)
ORDER BY r.seq LIMIT 1

-- name: PendingAfter
-- One pass over the thread's pending runs; INDEXED BY, as the planner
-- would otherwise search the primary key by tenant alone.
SELECT coalesce(max(not_before IS NULL OR not_before <= ?3), 0), min(CASE WHEN not_before > ?3 THEN not_before END)
FROM trellis_runs INDEXED BY trellis_runs_thread
WHERE tenant = ?1 AND thread_id = ?2 AND status = 'pending'

-- name: RunningRun
SELECT run_id FROM trellis_runs WHERE tenant = ?1 AND thread_id = ?2 AND status = 'running'

-- name: CountRunning
SELECT count(*) FROM trellis_runs WHERE tenant = ?1 AND status = 'running'

-- name: ClaimRun
-- Not while another owner's pre-claim (token 0) of the run is live: its
-- process may be executing the run before its claim.
UPDATE trellis_runs SET status = 'running', updated_at = ?1, lease_token = lease_token + 1, event_seq = event_seq + ?4,
	lease_owner = ?5, lease_expires_at = ?6
WHERE tenant = ?2 AND run_id = ?3
	AND (lease_owner IS NULL OR lease_token <> 0 OR lease_owner = ?5 OR lease_expires_at <= ?1)
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq

-- name: ClaimPendingRun
-- Not while another owner's pre-claim (token 0) of the run is live: its
-- process may be executing the run before its claim.
UPDATE trellis_runs SET status = 'running', updated_at = ?1, lease_token = lease_token + 1, event_seq = event_seq + ?4,
	lease_owner = ?5, lease_expires_at = ?6
WHERE tenant = ?2 AND run_id = ?3 AND status = 'pending' AND (not_before IS NULL OR not_before <= ?1)
	AND (lease_owner IS NULL OR lease_token <> 0 OR lease_owner = ?5 OR lease_expires_at <= ?1)
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq

-- name: PreClaimHolder
SELECT lease_owner, lease_expires_at FROM trellis_runs
WHERE tenant = ?1 AND run_id = ?2 AND lease_token = 0 AND lease_owner IS NOT NULL

-- name: ReleasePreClaim
UPDATE trellis_runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = ?1 AND run_id = ?2 AND lease_token = 0 AND lease_owner = ?3

-- name: MarkThreadBusy
UPDATE trellis_threads SET status = 'busy' WHERE tenant = ?1 AND thread_id = ?2

-- name: LeaseToken
SELECT lease_token FROM trellis_runs WHERE tenant = ?1 AND run_id = ?2 AND lease_owner IS NOT NULL

-- name: RenewLease
UPDATE trellis_runs SET lease_expires_at = max(?1, lease_expires_at + 1)
WHERE tenant = ?2 AND run_id = ?3 AND lease_token = ?4 AND lease_owner IS NOT NULL RETURNING lease_expires_at

-- name: ExpiredLeases
-- On the partial index trellis_runs_lease_expiry (the rows holding a
-- lease), in its order.
SELECT tenant, run_id, thread_id, lease_owner, lease_token, lease_expires_at FROM trellis_runs
WHERE lease_expires_at <= ?1 AND lease_expires_at IS NOT NULL
ORDER BY lease_expires_at, tenant, run_id LIMIT coalesce(?2, -1)

-- name: TakeOverLease
UPDATE trellis_runs SET lease_owner = ?1, lease_token = lease_token + 1, lease_expires_at = ?2, updated_at = ?7
WHERE tenant = ?3 AND run_id = ?4 AND lease_token = ?5 AND lease_expires_at = ?6 RETURNING lease_token, thread_id

-- name: RenewPreClaim
UPDATE trellis_runs SET lease_expires_at = ?1 WHERE tenant = ?2 AND run_id = ?3 AND lease_token = 0 AND lease_owner = ?4

-- name: DropLease
UPDATE trellis_runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = ?1 AND run_id = ?2 AND lease_token = ?3 AND lease_expires_at = ?4

-- name: ImportLease
-- A lease row of an export made before the lease moved onto the run's
-- row (db.LegacyLeases); a run holding a lease already keeps it.
UPDATE trellis_runs SET lease_owner = ?4, lease_token = ?5, lease_expires_at = ?6
WHERE tenant = ?1 AND run_id = ?2 AND thread_id = ?3 AND lease_owner IS NULL

-- name: EndRun
-- Fenced by the lease on the row it ends (no row when its token is not
-- ?8, or no lease holds the run), which it clears.
UPDATE trellis_runs SET status = ?1, usage = ?2, error = ?3, updated_at = ?4, ended_at = ?4, event_seq = event_seq + ?7,
	lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = ?5 AND run_id = ?6 AND lease_token = ?8 AND lease_owner IS NOT NULL
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, event_seq

-- name: FreeThread
UPDATE trellis_threads SET status = ?1 WHERE tenant = ?2 AND thread_id = ?3 AND status = 'busy'

-- name: CancelRun
UPDATE trellis_runs SET status = ?1, updated_at = ?2, ended_at = ?2 WHERE tenant = ?3 AND run_id = ?4

-- name: RequestCancel
UPDATE trellis_runs SET cancel_requested = ?1, updated_at = ?2 WHERE tenant = ?3 AND run_id = ?4

-- name: PendingThreads
-- A thread whose pending runs include one without a start time may start
-- now (NULL).
SELECT tenant, thread_id, CASE WHEN min(coalesce(not_before, 0)) > 0 THEN min(not_before) END FROM trellis_runs
WHERE status = 'pending' AND (tenant > ?1 OR (tenant = ?1 AND thread_id > ?2))
GROUP BY tenant, thread_id ORDER BY tenant, thread_id LIMIT ?3

-- name: BumpEventSeq
UPDATE trellis_runs SET event_seq = event_seq + ?1 WHERE tenant = ?2 AND run_id = ?3 RETURNING event_seq

-- name: FencedBumpEventSeq
-- LeaseToken and BumpEventSeq in one statement: the lease is on the row
-- it bumps.
UPDATE trellis_runs SET event_seq = event_seq + ?1
WHERE tenant = ?2 AND run_id = ?3 AND lease_token = ?4 AND lease_owner IS NOT NULL
RETURNING event_seq
