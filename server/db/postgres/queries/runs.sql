-- Runs, leases and their events on PostgreSQL (see datasets.sql). Writes
-- run under READ COMMITTED, so a read-check-write locks what it checks
-- (FOR UPDATE, FOR KEY SHARE), and the partial unique index
-- trellis_runs_one_running decides two claims of one thread that race.
-- A run's lease is on its row: lease_owner and lease_expires_at (both
-- NULL when no lease holds the run) and lease_token; a fenced write
-- compares the token on the row it updates, whose lock it takes anyway,
-- and a take-over's UPDATE of the same row waits for it.

-- name: GetRun
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND $3 IN ('', thread_id)

-- name: GetRunForUpdate
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND $3 IN ('', thread_id)
FOR UPDATE

-- name: SelectRuns
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs

-- name: LockRunThread
-- FOR KEY SHARE: the thread cannot be deleted until the run is in.
SELECT 1 FROM trellis_threads WHERE tenant = $1 AND thread_id = $2 FOR KEY SHARE

-- name: InsertRun
INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq,
	lease_owner, lease_expires_at)
VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, NULL, '', $8, $8, $9, '', $10, 0, 0, $11, $12)
ON CONFLICT DO NOTHING
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version

-- name: ExtendThreadExpiry
UPDATE trellis_threads SET expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $1::timestamptz + ttl_us * interval '1 microsecond' END
WHERE tenant = $2 AND thread_id = $3

-- name: ListRuns
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs WHERE tenant = $1 AND thread_id = $2 AND $3 IN ('', status)
ORDER BY seq DESC LIMIT $4 OFFSET $5

-- name: DeleteRun
DELETE FROM trellis_runs WHERE tenant = $1 AND run_id = $2

-- name: NextPending
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version
FROM trellis_runs
WHERE tenant = $1 AND thread_id = $2 AND status = 'pending' AND (not_before IS NULL OR not_before <= $3)
ORDER BY seq LIMIT 1

-- name: NextPendingRun
SELECT r.run_id, r.thread_id, r.assistant_id, r.status, r.metadata, r.kwargs, r.multitask_strategy, r.usage, r.error,
	r.created_at, r.updated_at, r.not_before, r.cancel_requested, r.assistant_version,
	EXISTS (SELECT 1 FROM trellis_runs x WHERE x.tenant = $1 AND x.thread_id = $2 AND x.status = 'running'),
	coalesce(a.assistant_id, ''), coalesce(a.graph_id, ''), coalesce(a.name, ''), coalesce(a.description, ''),
	a.config, a.context, a.metadata, coalesce(a.version, 0), coalesce(a.created_at, r.created_at), coalesce(a.updated_at, r.created_at)
-- The assistant's row is looked up by its whole key (LIMIT 1 keeps the
-- subquery a lookup per run): as a plain join on an empty or never
-- analyzed table, the generic plan scanned the tenant's assistants.
FROM trellis_runs r LEFT JOIN LATERAL (
	SELECT * FROM trellis_assistants x WHERE x.tenant = $1 AND x.assistant_id = r.assistant_id LIMIT 1
) a ON true
WHERE r.tenant = $1 AND r.thread_id = $2 AND r.status = 'pending' AND (r.not_before IS NULL OR r.not_before <= $3)
ORDER BY r.seq LIMIT 1

-- name: PendingAfter
SELECT coalesce(bool_or(not_before IS NULL OR not_before <= $3), false), min(not_before) FILTER (WHERE not_before > $3)
FROM trellis_runs WHERE tenant = $1 AND thread_id = $2 AND status = 'pending'

-- name: RunningRun
SELECT run_id FROM trellis_runs WHERE tenant = $1 AND thread_id = $2 AND status = 'running'

-- name: LockRunSlots
-- The tenant's claims take turns on a transaction lock, so the count
-- (read after it, under READ COMMITTED) includes every claim committed
-- before.
SELECT pg_advisory_xact_lock(hashtextextended('trellis_run_slots:' || $1, 0))

-- name: CountRunning
SELECT count(*) FROM trellis_runs WHERE tenant = $1 AND status = 'running'

-- name: ClaimRun
-- Not while another owner's pre-claim (token 0) of the run is live: its
-- process may be executing the run before its claim.
UPDATE trellis_runs SET status = 'running', updated_at = $1, lease_token = lease_token + 1, event_seq = event_seq + $4,
	lease_owner = $5, lease_expires_at = $6
WHERE tenant = $2 AND run_id = $3
	AND (lease_owner IS NULL OR lease_token <> 0 OR lease_owner = $5 OR lease_expires_at <= $1)
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq

-- name: ClaimPendingRun
-- Not while another owner's pre-claim (token 0) of the run is live: its
-- process may be executing the run before its claim.
UPDATE trellis_runs SET status = 'running', updated_at = $1, lease_token = lease_token + 1, event_seq = event_seq + $4,
	lease_owner = $5, lease_expires_at = $6
WHERE tenant = $2 AND run_id = $3 AND status = 'pending' AND (not_before IS NULL OR not_before <= $1)
	AND (lease_owner IS NULL OR lease_token <> 0 OR lease_owner = $5 OR lease_expires_at <= $1)
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq

-- name: PreClaimHolder
SELECT lease_owner, lease_expires_at FROM trellis_runs
WHERE tenant = $1 AND run_id = $2 AND lease_token = 0 AND lease_owner IS NOT NULL

-- name: ReleasePreClaim
UPDATE trellis_runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = $1 AND run_id = $2 AND lease_token = 0 AND lease_owner = $3

-- name: ClaimPendingRunMarkBusy
-- ClaimPendingRun and MarkThreadBusy as one statement: the thread is set
-- busy only when the run was claimed (t reads r), after the run's row is
-- locked, as the two statements did in turn.
WITH r AS (
	UPDATE trellis_runs SET status = 'running', updated_at = $1, lease_token = lease_token + 1, event_seq = event_seq + $4,
		lease_owner = $5, lease_expires_at = $6
	WHERE tenant = $2 AND run_id = $3 AND status = 'pending' AND (not_before IS NULL OR not_before <= $1)
		AND (lease_owner IS NULL OR lease_token <> 0 OR lease_owner = $5 OR lease_expires_at <= $1)
	RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq
), t AS (
	UPDATE trellis_threads SET status = 'busy' WHERE tenant = $2 AND thread_id = (SELECT thread_id FROM r)
)
SELECT run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq
FROM r

-- name: MarkThreadBusy
UPDATE trellis_threads SET status = 'busy' WHERE tenant = $1 AND thread_id = $2

-- name: LeaseToken
-- FOR NO KEY UPDATE: the lock an UPDATE of the row takes, so a take-over
-- (or a renewal) waits for the fenced transaction, while a new event's
-- foreign key check (FOR KEY SHARE) does not.
SELECT lease_token FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND lease_owner IS NOT NULL
FOR NO KEY UPDATE

-- name: RenewLease
UPDATE trellis_runs SET lease_expires_at = greatest($1, lease_expires_at + interval '1 microsecond')
WHERE tenant = $2 AND run_id = $3 AND lease_token = $4 AND lease_owner IS NOT NULL RETURNING lease_expires_at

-- name: ExpiredLeases
-- On the partial index trellis_runs_lease_expiry (the rows holding a
-- lease), in its order.
SELECT tenant, run_id, thread_id, lease_owner, lease_token, lease_expires_at FROM trellis_runs
WHERE lease_expires_at <= $1 AND lease_expires_at IS NOT NULL
ORDER BY lease_expires_at, tenant, run_id LIMIT $2

-- name: TakeOverLease
UPDATE trellis_runs SET lease_owner = $1, lease_token = lease_token + 1, lease_expires_at = $2, updated_at = $7
WHERE tenant = $3 AND run_id = $4 AND lease_token = $5 AND lease_expires_at = $6 RETURNING lease_token, thread_id

-- name: RenewPreClaim
UPDATE trellis_runs SET lease_expires_at = $1 WHERE tenant = $2 AND run_id = $3 AND lease_token = 0 AND lease_owner = $4

-- name: DropLease
UPDATE trellis_runs SET lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = $1 AND run_id = $2 AND lease_token = $3 AND lease_expires_at = $4

-- name: ImportLease
-- A lease row of an export made before the lease moved onto the run's
-- row (db.LegacyLeases); a run holding a lease already keeps it.
UPDATE trellis_runs SET lease_owner = $4, lease_token = $5, lease_expires_at = $6
WHERE tenant = $1 AND run_id = $2 AND thread_id = $3 AND lease_owner IS NULL

-- name: EndRun
-- Fenced by the lease on the row it ends (no row when its token is not
-- $8, or no lease holds the run), which it clears. Under READ COMMITTED
-- a take-over committed meanwhile is seen: the row is re-checked.
UPDATE trellis_runs SET status = $1, usage = $2, error = $3, updated_at = $4, ended_at = $4, event_seq = event_seq + $7,
	lease_owner = NULL, lease_expires_at = NULL
WHERE tenant = $5 AND run_id = $6 AND lease_token = $8 AND lease_owner IS NOT NULL
RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version, event_seq

-- name: EndRunWithResult
-- EndRun and SetThreadResult as one statement, one round trip: the
-- thread's row is updated only when the run's was (t reads r), in the
-- order the two statements took their row locks (the run's, then the
-- thread's). No row when the lease does not hold the run; a thread gone
-- took its runs with it (the cascade), so r is then empty too. p is
-- PendingAfter as of the statement's snapshot (the ended run was not
-- pending): a run accepted while the statement runs is missed, and its
-- own Advance, which then saw this run running, waits its busy snooze
-- and looks again.
WITH r AS (
	UPDATE trellis_runs SET status = $1, usage = $2, error = $3, updated_at = $4, ended_at = $4, event_seq = event_seq + $7,
		lease_owner = NULL, lease_expires_at = NULL
	WHERE tenant = $5 AND run_id = $6 AND lease_token = $8 AND lease_owner IS NOT NULL
	RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version, event_seq
), t AS (
	UPDATE trellis_threads SET status = $9, error = $10,
		metadata = CASE WHEN $15 = '' OR metadata->'title' IS NOT NULL THEN metadata ELSE metadata || jsonb_build_object('title', $15::text) END,
		thread_values = CASE WHEN $11 THEN $12::jsonb ELSE thread_values END,
		interrupts = coalesce($13::jsonb, interrupts), updated_at = $4,
		expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $4::timestamptz + ttl_us * interval '1 microsecond' END
	WHERE tenant = $5 AND thread_id = $14 AND EXISTS (SELECT 1 FROM r)
	RETURNING thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at
), p AS (
	SELECT coalesce(bool_or(not_before IS NULL OR not_before <= $4), false) AS due, min(not_before) FILTER (WHERE not_before > $4) AS next
	FROM trellis_runs WHERE tenant = $5 AND thread_id = $14 AND status = 'pending'
)
SELECT r.run_id, r.thread_id, r.assistant_id, r.status, r.metadata, r.kwargs, r.multitask_strategy, r.usage, r.error,
	r.created_at, r.updated_at, r.not_before, r.cancel_requested, r.assistant_version, r.event_seq,
	t.thread_id, t.status, t.metadata, t.thread_values, t.interrupts, t.error, t.created_at, t.updated_at, t.ttl_us, t.ttl_strategy, t.expires_at,
	p.due, p.next
FROM r, t, p

-- name: FreeThread
UPDATE trellis_threads SET status = $1 WHERE tenant = $2 AND thread_id = $3 AND status = 'busy'

-- name: CancelRun
UPDATE trellis_runs SET status = $1, updated_at = $2, ended_at = $2 WHERE tenant = $3 AND run_id = $4

-- name: RequestCancel
UPDATE trellis_runs SET cancel_requested = $1, updated_at = $2 WHERE tenant = $3 AND run_id = $4

-- name: PendingThreads
-- Byte order (COLLATE "C"), as SQLite compares; a thread whose pending
-- runs include one without a start time may start now (NULL).
SELECT tenant, thread_id, CASE WHEN bool_or(not_before IS NULL) THEN NULL ELSE min(not_before) END FROM trellis_runs
WHERE status = 'pending' AND (tenant COLLATE "C", thread_id COLLATE "C") > ($1, $2)
GROUP BY tenant, thread_id ORDER BY tenant COLLATE "C", thread_id COLLATE "C" LIMIT $3

-- name: BumpEventSeq
UPDATE trellis_runs SET event_seq = event_seq + $1 WHERE tenant = $2 AND run_id = $3 RETURNING event_seq

-- name: FencedBumpEventSeq
-- LeaseToken and BumpEventSeq in one statement: the lease is on the row
-- it bumps and locks (a take-over committed meanwhile is re-checked).
UPDATE trellis_runs SET event_seq = event_seq + $1
WHERE tenant = $2 AND run_id = $3 AND lease_token = $4 AND lease_owner IS NOT NULL
RETURNING event_seq

-- name: ImportedRuns
-- Runs keep their imported sequence numbers; new runs are numbered after.
SELECT setval(pg_get_serial_sequence('trellis_runs', 'seq'), greatest((SELECT max(seq) FROM trellis_runs), 1))

-- name: InsertRunOnThread
-- LockRunThread, InsertRun, ExtendThreadExpiry and, when $13 (graph ID)
-- is not empty, TagThread with $13 and $14 (assistant ID), as one
-- statement, one round trip. t locks the thread FOR KEY SHARE as
-- LockRunThread did (a delete under way is waited for, and its thread
-- then not found), so it cannot be deleted until the run is in; the run
-- is inserted only from t's row, and the thread's row updated once (e),
-- only when the run was inserted and there is a tag to set or an expiry
-- to move (setting NULL to NULL is skipped). The one row always returned
-- says which: InsertRun's columns (empty when nothing was stored),
-- whether the thread was found, whether the run was stored, and false
-- (no ExtendThreadExpiry is left to run).
WITH t AS (
	SELECT thread_id FROM trellis_threads WHERE tenant = $1 AND thread_id = $3 FOR KEY SHARE
), r AS (
	INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq,
		lease_owner, lease_expires_at)
	SELECT $1, $2, t.thread_id, $4, 'pending', $5::jsonb, $6::jsonb, $7, NULL, '', $8::timestamptz, $8::timestamptz, $9::timestamptz, '',
		$10::integer, 0, 0, $11::text, $12::timestamptz
	FROM t
	ON CONFLICT DO NOTHING
	RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version
), e AS (
	UPDATE trellis_threads SET expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $8::timestamptz + ttl_us * interval '1 microsecond' END,
		metadata = CASE WHEN $13::text = '' THEN metadata ELSE metadata || jsonb_build_object('graph_id', $13::text, 'assistant_id', $14::text) END,
		updated_at = CASE WHEN $13::text = '' THEN updated_at ELSE $8::timestamptz END
	WHERE tenant = $1 AND thread_id = $3 AND ($13::text <> '' OR ttl_us IS NOT NULL OR expires_at IS NOT NULL) AND EXISTS (SELECT 1 FROM r)
)
SELECT coalesce(r.run_id, ''), coalesce(r.thread_id, ''), coalesce(r.assistant_id, ''), coalesce(r.status, ''),
	coalesce(r.metadata, '{}'::jsonb), r.kwargs, coalesce(r.multitask_strategy, ''), r.usage, coalesce(r.error, ''),
	r.created_at, r.updated_at, r.not_before, coalesce(r.cancel_requested, ''), r.assistant_version,
	EXISTS (SELECT 1 FROM t), r.run_id IS NOT NULL, false
FROM (SELECT 1) one LEFT JOIN r ON true

-- name: InsertThreadAndRun
-- InsertThread (an idle thread with metadata $13 and interrupts $14, no
-- values, error nor TTL, created at $8) unless it exists, then
-- InsertRunOnThread with its tag in $15 and $16, as one statement, one
-- round trip. A thread that exists is locked, its expiry moved and its
-- tag set as InsertRunOnThread does (old); one the statement creates (nt)
-- needs none of it: no other transaction sees it before the commit, it
-- has no TTL, and the caller put the tag in its metadata $13. All the
-- statement's parts read one snapshot, so a thread another transaction
-- inserted or deleted after it began is neither inserted nor found: the
-- row says the thread was not found, and the caller runs
-- InsertRunOnThread, which reads anew. The row is InsertRunOnThread's.
WITH nt AS (
	INSERT INTO trellis_threads (tenant, thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at,
		ttl_us, ttl_strategy, expires_at)
	VALUES ($1, $3, 'idle', $13::jsonb, NULL, $14::jsonb, '', $8, $8, NULL, '', NULL)
	ON CONFLICT DO NOTHING
	RETURNING thread_id
), old AS (
	SELECT thread_id FROM trellis_threads WHERE tenant = $1 AND thread_id = $3 FOR KEY SHARE
), t AS (
	SELECT thread_id FROM nt UNION ALL SELECT thread_id FROM old
), r AS (
	INSERT INTO trellis_runs (tenant, run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version, lease_token, event_seq,
		lease_owner, lease_expires_at)
	SELECT $1, $2, t.thread_id, $4, 'pending', $5::jsonb, $6::jsonb, $7, NULL, '', $8::timestamptz, $8::timestamptz, $9::timestamptz, '',
		$10::integer, 0, 0, $11::text, $12::timestamptz
	FROM t
	ON CONFLICT DO NOTHING
	RETURNING run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
		created_at, updated_at, not_before, cancel_requested, assistant_version
), e AS (
	UPDATE trellis_threads SET expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $8::timestamptz + ttl_us * interval '1 microsecond' END,
		metadata = CASE WHEN $15::text = '' THEN metadata ELSE metadata || jsonb_build_object('graph_id', $15::text, 'assistant_id', $16::text) END,
		updated_at = CASE WHEN $15::text = '' THEN updated_at ELSE $8::timestamptz END
	WHERE tenant = $1 AND thread_id = $3 AND ($15::text <> '' OR ttl_us IS NOT NULL OR expires_at IS NOT NULL) AND EXISTS (SELECT 1 FROM r)
		AND EXISTS (SELECT 1 FROM old)
)
SELECT coalesce(r.run_id, ''), coalesce(r.thread_id, ''), coalesce(r.assistant_id, ''), coalesce(r.status, ''),
	coalesce(r.metadata, '{}'::jsonb), r.kwargs, coalesce(r.multitask_strategy, ''), r.usage, coalesce(r.error, ''),
	r.created_at, r.updated_at, r.not_before, coalesce(r.cancel_requested, ''), r.assistant_version,
	EXISTS (SELECT 1 FROM t), r.run_id IS NOT NULL, false
FROM (SELECT 1) one LEFT JOIN r ON true
