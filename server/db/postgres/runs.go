package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const runCols = `run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, usage, error,
	created_at, updated_at, not_before, cancel_requested, assistant_version`

// scanRun reads a row of runCols; an undecodable row is an error naming
// it.
func scanRun(s scanner, tenant string) (db.Run, error) {
	var r db.Run
	var md, kwargs, usage []byte
	var notBefore *time.Time
	var version *int32
	if err := s.Scan(&r.ID, &r.ThreadID, &r.AssistantID, &r.Status, &md, &kwargs, &r.MultitaskStrategy, &usage, &r.Error,
		&r.CreatedAt, &r.UpdatedAt, &notBefore, &r.CancelRequested, &version); err != nil {
		return db.Run{}, err
	}
	var err error
	if r.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Run{}, fmt.Errorf("server/db/postgres: run %q of thread %q (tenant %q): %w", r.ID, r.ThreadID, tenant, err)
	}
	r.Kwargs, r.Usage = kwargs, usage
	r.CreatedAt, r.UpdatedAt = utc(r.CreatedAt), utc(r.UpdatedAt)
	if notBefore != nil {
		r.NotBefore = utc(*notBefore)
	}
	if version != nil {
		r.AssistantVersion = int(*version)
	}
	return r, nil
}

// getRun reads a run of the tenant; threadID "" matches any thread. lock
// takes the row's lock for the rest of the transaction.
func getRun(ctx context.Context, q querier, tenant, threadID, runID string, lock bool) (db.Run, error) {
	query := `SELECT ` + runCols + ` FROM trellis_runs WHERE tenant = $1 AND run_id = $2 AND $3 IN ('', thread_id)`
	if lock {
		query += ` FOR UPDATE`
	}
	r, err := scanRun(q.QueryRow(ctx, query, tenant, runID, threadID), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		if threadID != "" {
			return db.Run{}, fmt.Errorf("server/db/postgres: run %q of thread %q (tenant %q): %w", runID, threadID, tenant, db.ErrNotFound)
		}
		return db.Run{}, notFound("run", runID, tenant)
	}
	if err != nil {
		return db.Run{}, wrap(err, "get run %q", runID)
	}
	return r, nil
}

// CreateRun stores a pending run (an empty ID gets a new UUID) on an
// existing thread (ErrNotFound otherwise). Status, Usage, Error and
// CancelRequested are ignored; Kwargs must be JSON ({} when empty). A taken
// ID is ErrConflict.
func (d *DB) CreateRun(ctx context.Context, tenant string, r db.Run) (db.Run, error) {
	nr, err := newRun(tenant, r)
	if err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err = d.write(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = createRun(ctx, tx, tenant, nr)
		return err
	})
	return out, err
}

// CreateRunTx is CreateRun, after creating thread when it is not nil and
// missing, inside tx (a pgx.Tx on this DB's database) that the caller
// commits: see db.TxRunCreator.
func (d *DB) CreateRunTx(ctx context.Context, tx any, tenant string, thread *db.Thread, r db.Run) (db.Run, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return db.Run{}, fmt.Errorf("server/db/postgres: CreateRunTx needs a pgx.Tx of the same database, got %T", tx)
	}
	nr, err := newRun(tenant, r)
	if err != nil {
		return db.Run{}, err
	}
	if thread != nil {
		if thread.ID != r.ThreadID {
			return db.Run{}, dbutil.Invalid("the new thread %q is not the run's thread %q", thread.ID, r.ThreadID)
		}
		if err := createThreadIfMissing(ctx, ptx, tenant, *thread); err != nil {
			return db.Run{}, err
		}
	}
	return createRun(ctx, ptx, tenant, nr)
}

// ClassifyTxError wraps a storage failure of the database in a
// transaction the caller committed as the DB's own errors: see
// db.TxRunCreator.
func (d *DB) ClassifyTxError(err error) error { return classify(err) }

// runRow is a run checked and encoded for its INSERT.
type runRow struct {
	r          db.Run
	md, kwargs []byte
	version    any // the assistant version, NULL for none
}

// newRun checks r and encodes it (an empty ID gets a new one).
func newRun(tenant string, r db.Run) (runRow, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return runRow{}, err
	}
	if r.ID != "" {
		if err := db.CheckID("run", r.ID); err != nil {
			return runRow{}, err
		}
	}
	md, err := dbutil.EncodeMetadata(r.Metadata)
	if err != nil {
		return runRow{}, err
	}
	kwargs, err := dbutil.OptionalJSON("kwargs", r.Kwargs)
	if err != nil {
		return runRow{}, err
	}
	if kwargs == nil {
		kwargs = []byte("{}")
	}
	version, err := dbutil.RunVersion(r.AssistantVersion)
	if err != nil {
		return runRow{}, err
	}
	if r.ID == "" {
		r.ID = dbutil.NewID()
	}
	return runRow{r: r, md: md, kwargs: kwargs, version: version}, nil
}

// createThreadIfMissing stores a new idle thread with t's ID and metadata
// unless the thread exists.
func createThreadIfMissing(ctx context.Context, tx pgx.Tx, tenant string, t db.Thread) error {
	if err := db.CheckID("thread", t.ID); err != nil {
		return err
	}
	md, err := dbutil.EncodeMetadata(t.Metadata)
	if err != nil {
		return err
	}
	interrupts, err := dbutil.Object("interrupts", nil)
	if err != nil {
		return err
	}
	ttl, strategy, err := dbutil.ThreadTTL(nil)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO trellis_threads (tenant, `+threadCols+`) VALUES ($1, $2, $3, $4, NULL, $5, '', $6, $6, $7, $8, NULL)
		ON CONFLICT DO NOTHING`, tenant, t.ID, db.ThreadIdle, md, interrupts, dbutil.Now(), ttl, strategy); err != nil {
		return wrap(err, "create thread %q", t.ID)
	}
	return nil
}

// createRun stores the pending run nr in tx.
func createRun(ctx context.Context, tx pgx.Tx, tenant string, nr runRow) (db.Run, error) {
	r := nr.r
	// FOR KEY SHARE: the thread cannot be deleted until the run is in.
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM trellis_threads WHERE tenant = $1 AND thread_id = $2 FOR KEY SHARE`, tenant, r.ThreadID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Run{}, notFound("thread", r.ThreadID, tenant)
	}
	if err != nil {
		return db.Run{}, wrap(err, "create run %q", r.ID)
	}
	now := dbutil.Now()
	tag, err := tx.Exec(ctx, `INSERT INTO trellis_runs (tenant, `+runCols+`, lease_token, event_seq)
		VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, NULL, '', $8, $8, $9, '', $10, 0, 0) ON CONFLICT DO NOTHING`,
		tenant, r.ID, r.ThreadID, r.AssistantID, nr.md, nr.kwargs, r.MultitaskStrategy, now, nullTime(r.NotBefore), nr.version)
	if err != nil {
		return db.Run{}, wrap(err, "create run %q", r.ID)
	}
	if tag.RowsAffected() == 0 {
		return db.Run{}, fmt.Errorf("server/db/postgres: run %q exists: %w", r.ID, db.ErrConflict)
	}
	// A new run is activity: the thread's expiry moves on.
	if _, err := tx.Exec(ctx, `UPDATE trellis_threads SET `+extendExpiry(1)+` WHERE tenant = $2 AND thread_id = $3`,
		now, tenant, r.ThreadID); err != nil {
		return db.Run{}, wrap(err, "create run %q", r.ID)
	}
	return getRun(ctx, tx, tenant, "", r.ID, false)
}

// GetRun returns the run of the thread.
func (d *DB) GetRun(ctx context.Context, tenant, threadID, runID string) (db.Run, error) {
	return getRun(ctx, d.pool, tenant, threadID, runID, false)
}

// ListRuns lists the thread's runs newest first (creation order), those
// with q.Status when set, paged by q.Limit (10 when 0) and q.Offset. An
// unknown thread is ErrNotFound.
func (d *DB) ListRuns(ctx context.Context, tenant, threadID string, q db.RunQuery) ([]db.Run, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	if err := dbutil.RunStatus(q.Status, true); err != nil {
		return nil, err
	}
	out := []db.Run{}
	err = d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getThread(ctx, tx, tenant, threadID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+runCols+` FROM trellis_runs WHERE tenant = $1 AND thread_id = $2 AND $3 IN ('', status)
			ORDER BY seq DESC LIMIT $4 OFFSET $5`, tenant, threadID, string(q.Status), limit, offset)
		if err != nil {
			return wrap(err, "list the runs of thread %q", threadID)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows, tenant)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return wrap(rows.Err(), "list the runs of thread %q", threadID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRun deletes a terminal run with its events; a live run is
// ErrConflict (cancel it first).
func (d *DB) DeleteRun(ctx context.Context, tenant, threadID, runID string) error {
	return d.write(ctx, func(tx pgx.Tx) error {
		r, err := getRun(ctx, tx, tenant, threadID, runID, true)
		if err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return fmt.Errorf("server/db/postgres: delete run %q: it is %s; cancel it first: %w", runID, r.Status, db.ErrConflict)
		}
		_, err = tx.Exec(ctx, `DELETE FROM trellis_runs WHERE tenant = $1 AND run_id = $2`, tenant, runID)
		return wrap(err, "delete run %q", runID)
	})
}

// NextPending returns the thread's oldest pending run (creation order)
// whose NotBefore is not after now; ErrNotFound when there is none.
func (d *DB) NextPending(ctx context.Context, tenant, threadID string, now time.Time) (db.Run, error) {
	r, err := scanRun(d.pool.QueryRow(ctx, `SELECT `+runCols+` FROM trellis_runs
		WHERE tenant = $1 AND thread_id = $2 AND status = 'pending' AND (not_before IS NULL OR not_before <= $3)
		ORDER BY seq LIMIT 1`, tenant, threadID, now), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Run{}, fmt.Errorf("server/db/postgres: no pending run of thread %q (tenant %q) is due: %w", threadID, tenant, db.ErrNotFound)
	}
	return r, wrap(err, "next pending run of thread %q", threadID)
}

// runningIndex is the partial unique index that allows one running run
// per (tenant, thread).
const runningIndex = "trellis_runs_one_running"

// ClaimRun moves a pending run to running and gives owner a lease for ttl
// with the run's next token (1 for the first claim). A run whose NotBefore
// is still ahead, or that is not pending, is ErrConflict; a thread with
// another running run is ErrBusy — also when two claimers race, which the
// partial unique index decides.
func (d *DB) ClaimRun(ctx context.Context, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	return d.ClaimRunWithin(ctx, tenant, runID, owner, ttl, 0)
}

var _ db.RunLimiter = (*DB)(nil)

// ClaimRunWithin is ClaimRun that also fails with db.ErrTenantBusy when
// the tenant has max runs running already (max <= 0: no cap), counted in
// the claim's transaction; see db.RunLimiter.
func (d *DB) ClaimRunWithin(ctx context.Context, tenant, runID, owner string, ttl time.Duration, max int) (db.Run, db.Lease, error) {
	if err := dbutil.TTL(ttl); err != nil {
		return db.Run{}, db.Lease{}, err
	}
	if owner == "" {
		return db.Run{}, db.Lease{}, dbutil.Invalid("the lease owner is empty")
	}
	var (
		run   db.Run
		lease db.Lease
	)
	err := d.write(ctx, func(tx pgx.Tx) error {
		var err error
		run, lease, err = claimRun(ctx, tx, tenant, runID, owner, ttl, max)
		return err
	})
	if err != nil {
		return db.Run{}, db.Lease{}, err
	}
	return run, lease, nil
}

// ClaimRunTx is ClaimRun inside tx (a pgx.Tx on this DB's database), the
// transaction of a run's first step, which the caller commits: see
// db.TxClaimer.
func (d *DB) ClaimRunTx(ctx context.Context, tx any, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: ClaimRunTx needs a pgx.Tx of the same database, got %T", tx)
	}
	if err := dbutil.TTL(ttl); err != nil {
		return db.Run{}, db.Lease{}, err
	}
	if owner == "" {
		return db.Run{}, db.Lease{}, dbutil.Invalid("the lease owner is empty")
	}
	return claimRun(ctx, ptx, tenant, runID, owner, ttl, 0)
}

var _ db.TxClaimer = (*DB)(nil)

// claimRun is the claim of ClaimRunWithin in tx.
func claimRun(ctx context.Context, tx pgx.Tx, tenant, runID, owner string, ttl time.Duration, max int) (db.Run, db.Lease, error) {
	r, err := getRun(ctx, tx, tenant, "", runID, true)
	if err != nil {
		return db.Run{}, db.Lease{}, err
	}
	now := dbutil.Now()
	if r.Status != db.RunPending {
		return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: claim run %q: it is %s, not pending: %w", runID, r.Status, db.ErrConflict)
	}
	if r.NotBefore.After(now) {
		return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: claim run %q: it may not start before %s: %w", runID, r.NotBefore.Format(time.RFC3339Nano), db.ErrConflict)
	}
	var running string
	err = tx.QueryRow(ctx, `SELECT run_id FROM trellis_runs WHERE tenant = $1 AND thread_id = $2 AND status = 'running'`,
		tenant, r.ThreadID).Scan(&running)
	if err == nil {
		return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: claim run %q: run %q of thread %q is running: %w", runID, running, r.ThreadID, db.ErrBusy)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return db.Run{}, db.Lease{}, wrap(err, "claim run %q", runID)
	}
	// Claims of one tenant take turns on a transaction lock, so the
	// count (read after it, under READ COMMITTED) includes every claim
	// committed before.
	if max > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('trellis_run_slots:' || $1, 0))`, tenant); err != nil {
			return db.Run{}, db.Lease{}, wrap(err, "claim run %q: lock the tenant's run slots", runID)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE tenant = $1 AND status = 'running'`, tenant).Scan(&n); err != nil {
			return db.Run{}, db.Lease{}, wrap(err, "claim run %q: count the tenant's running runs", runID)
		}
		if n >= max {
			return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: claim run %q: tenant %q has %d running runs, its limit: %w", runID, tenant, n, db.ErrTenantBusy)
		}
	}
	var token int64
	if err := tx.QueryRow(ctx, `UPDATE trellis_runs SET status = 'running', updated_at = $1, lease_token = lease_token + 1
		WHERE tenant = $2 AND run_id = $3 RETURNING lease_token`, now, tenant, runID).Scan(&token); err != nil {
		if isUnique(err, runningIndex) {
			return db.Run{}, db.Lease{}, fmt.Errorf("server/db/postgres: claim run %q: thread %q has a running run: %w", runID, r.ThreadID, db.ErrBusy)
		}
		return db.Run{}, db.Lease{}, wrap(err, "claim run %q", runID)
	}
	lease := db.Lease{Tenant: tenant, RunID: runID, ThreadID: r.ThreadID, Owner: owner, Token: token, ExpiresAt: now.Add(ttl).Truncate(time.Microsecond)}
	if _, err := tx.Exec(ctx, `INSERT INTO trellis_leases (tenant, run_id, thread_id, owner, token, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant, run_id) DO UPDATE SET owner = excluded.owner, token = excluded.token, expires_at = excluded.expires_at`,
		tenant, runID, r.ThreadID, owner, token, lease.ExpiresAt); err != nil {
		return db.Run{}, db.Lease{}, wrap(err, "claim run %q", runID)
	}
	if _, err := tx.Exec(ctx, `UPDATE trellis_threads SET status = 'busy' WHERE tenant = $1 AND thread_id = $2`, tenant, r.ThreadID); err != nil {
		return db.Run{}, db.Lease{}, wrap(err, "claim run %q: mark its thread busy", runID)
	}
	run, err := getRun(ctx, tx, tenant, "", runID, false)
	if err != nil {
		return db.Run{}, db.Lease{}, err
	}
	return run, lease, nil
}

// leaseLost is the error for a fenced write whose lease no longer holds.
func leaseLost(l db.Lease) error {
	return fmt.Errorf("server/db/postgres: run %q (tenant %q): lease token %d of %q no longer holds the run: %w",
		l.RunID, l.Tenant, l.Token, l.Owner, db.ErrLeaseLost)
}

// fence checks that l still holds its run and locks the lease row until
// the transaction ends, so a take-over waits for the fenced write.
func fence(ctx context.Context, tx pgx.Tx, l db.Lease) error {
	var token int64
	err := tx.QueryRow(ctx, `SELECT token FROM trellis_leases WHERE tenant = $1 AND run_id = $2 FOR UPDATE`, l.Tenant, l.RunID).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && token != l.Token) {
		return leaseLost(l)
	}
	return wrap(err, "check the lease of run %q", l.RunID)
}

// RenewLease sets the lease's expiry to now + ttl (and always later than
// before, so a sweeper that read the old expiry cannot take the run
// over); ErrLeaseLost when its token no longer holds the run. An expired
// lease that nobody took over can still be renewed.
func (d *DB) RenewLease(ctx context.Context, l db.Lease, ttl time.Duration) (db.Lease, error) {
	if err := dbutil.TTL(ttl); err != nil {
		return db.Lease{}, err
	}
	var exp time.Time
	err := d.pool.QueryRow(ctx, `UPDATE trellis_leases SET expires_at = greatest($1, expires_at + interval '1 microsecond')
		WHERE tenant = $2 AND run_id = $3 AND token = $4 RETURNING expires_at`,
		dbutil.Now().Add(ttl), l.Tenant, l.RunID, l.Token).Scan(&exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Lease{}, leaseLost(l)
	}
	if err != nil {
		return db.Lease{}, wrap(err, "renew the lease of run %q", l.RunID)
	}
	l.ExpiresAt = utc(exp)
	return l, nil
}

// ExpiredLeases lists the leases (of every tenant) whose expiry is not
// after now, soonest expired first, at most limit (0: all).
func (d *DB) ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]db.Lease, error) {
	if limit < 0 {
		return nil, dbutil.Invalid("limit %d must not be negative", limit)
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	rows, err := d.pool.Query(ctx, `SELECT tenant, run_id, thread_id, owner, token, expires_at FROM trellis_leases
		WHERE expires_at <= $1 ORDER BY expires_at, tenant, run_id LIMIT $2`, now, lim)
	if err != nil {
		return nil, wrap(err, "list expired leases")
	}
	defer rows.Close()
	out := []db.Lease{}
	for rows.Next() {
		var l db.Lease
		if err := rows.Scan(&l.Tenant, &l.RunID, &l.ThreadID, &l.Owner, &l.Token, &l.ExpiresAt); err != nil {
			return nil, wrap(err, "list expired leases")
		}
		l.ExpiresAt = utc(l.ExpiresAt)
		out = append(out, l)
	}
	return out, wrap(rows.Err(), "list expired leases")
}

// TakeOver gives the run of an expired lease (as ExpiredLeases returned
// it) to owner with the next token, for ttl. It is ErrLeaseLost when the
// lease changed since it was read: renewed, taken over, or ended.
func (d *DB) TakeOver(ctx context.Context, expired db.Lease, owner string, ttl time.Duration) (db.Lease, error) {
	if err := dbutil.TTL(ttl); err != nil {
		return db.Lease{}, err
	}
	if owner == "" {
		return db.Lease{}, dbutil.Invalid("the lease owner is empty")
	}
	l := expired
	err := d.write(ctx, func(tx pgx.Tx) error {
		exp := dbutil.Now().Add(ttl)
		err := tx.QueryRow(ctx, `UPDATE trellis_leases SET owner = $1, token = token + 1, expires_at = $2
			WHERE tenant = $3 AND run_id = $4 AND token = $5 AND expires_at = $6 RETURNING token, thread_id`,
			owner, exp, expired.Tenant, expired.RunID, expired.Token, expired.ExpiresAt).Scan(&l.Token, &l.ThreadID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("server/db/postgres: take over run %q (tenant %q): the lease changed since it was read: %w",
				expired.RunID, expired.Tenant, db.ErrLeaseLost)
		}
		if err != nil {
			return wrap(err, "take over run %q", expired.RunID)
		}
		l.Owner, l.ExpiresAt = owner, exp
		_, err = tx.Exec(ctx, `UPDATE trellis_runs SET lease_token = $1, updated_at = $2 WHERE tenant = $3 AND run_id = $4`,
			l.Token, dbutil.Now(), l.Tenant, l.RunID)
		return wrap(err, "take over run %q", l.RunID)
	})
	if err != nil {
		return db.Lease{}, err
	}
	return l, nil
}

// FinishRun records a terminal status, usage (JSON or empty) and error
// message on the lease's run and ends the lease; ErrLeaseLost when the
// lease no longer holds the run.
func (d *DB) FinishRun(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string) (db.Run, error) {
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, err
	}
	u, err := dbutil.OptionalJSON("usage", usage)
	if err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err = d.write(ctx, func(tx pgx.Tx) error {
		if err := finishRunTx(ctx, tx, l, status, u, errMsg); err != nil {
			return err
		}
		var err error
		out, err = getRun(ctx, tx, l.Tenant, "", l.RunID, false)
		return err
	})
	return out, err
}

// finishRunTx checks the lease and ends its run in tx, freeing its thread
// when still busy.
func finishRunTx(ctx context.Context, tx pgx.Tx, l db.Lease, status db.RunStatus, u []byte, errMsg string) error {
	if err := fence(ctx, tx, l); err != nil {
		return err
	}
	now := dbutil.Now()
	if _, err := tx.Exec(ctx, `UPDATE trellis_runs SET status = $1, usage = $2, error = $3, updated_at = $4, ended_at = $4
		WHERE tenant = $5 AND run_id = $6`, string(status), u, errMsg, now, l.Tenant, l.RunID); err != nil {
		return wrap(err, "finish run %q", l.RunID)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM trellis_leases WHERE tenant = $1 AND run_id = $2`, l.Tenant, l.RunID); err != nil {
		return wrap(err, "finish run %q", l.RunID)
	}
	// A thread still busy (its outcome not recorded with
	// SetThreadResult) is no longer.
	if _, err := tx.Exec(ctx, `UPDATE trellis_threads SET status = $1 WHERE tenant = $2 AND thread_id = $3 AND status = 'busy'`,
		dbutil.AfterRun(status), l.Tenant, l.ThreadID); err != nil {
		return wrap(err, "finish run %q: free its thread", l.RunID)
	}
	return nil
}

// CancelPending ends a pending run with a terminal status; a run that is
// running or already ended is ErrConflict.
func (d *DB) CancelPending(ctx context.Context, tenant, threadID, runID string, status db.RunStatus) (db.Run, error) {
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err := d.write(ctx, func(tx pgx.Tx) error {
		r, err := getRun(ctx, tx, tenant, threadID, runID, true)
		if err != nil {
			return err
		}
		if r.Status != db.RunPending {
			return fmt.Errorf("server/db/postgres: cancel run %q: it is %s, not pending: %w", runID, r.Status, db.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `UPDATE trellis_runs SET status = $1, updated_at = $2, ended_at = $2 WHERE tenant = $3 AND run_id = $4`,
			string(status), dbutil.Now(), tenant, runID); err != nil {
			return wrap(err, "cancel run %q", runID)
		}
		out, err = getRun(ctx, tx, tenant, threadID, runID, false)
		return err
	})
	return out, err
}

// RequestCancel records that the live run is to be cancelled with action
// ("interrupt" or "rollback"); a run already ended is ErrConflict.
func (d *DB) RequestCancel(ctx context.Context, tenant, threadID, runID, action string) (db.Run, error) {
	if err := dbutil.CancelAction(action); err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err := d.write(ctx, func(tx pgx.Tx) error {
		r, err := getRun(ctx, tx, tenant, threadID, runID, true)
		if err != nil {
			return err
		}
		if r.Status.Terminal() {
			return fmt.Errorf("server/db/postgres: cancel run %q: it already ended (%s): %w", runID, r.Status, db.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `UPDATE trellis_runs SET cancel_requested = $1, updated_at = $2 WHERE tenant = $3 AND run_id = $4`,
			action, dbutil.Now(), tenant, runID); err != nil {
			return wrap(err, "cancel run %q", runID)
		}
		out, err = getRun(ctx, tx, tenant, threadID, runID, false)
		return err
	})
	return out, err
}

// PendingThreads lists threads with pending runs across tenants, after
// (afterTenant, afterThread) in byte order (COLLATE "C", as SQLite
// compares), with their earliest start.
func (d *DB) PendingThreads(ctx context.Context, afterTenant, afterThread string, limit int) ([]db.PendingThread, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d must be positive", limit)
	}
	rows, err := d.pool.Query(ctx, `SELECT tenant, thread_id, CASE WHEN bool_or(not_before IS NULL) THEN NULL ELSE min(not_before) END FROM trellis_runs
		WHERE status = 'pending' AND (tenant COLLATE "C", thread_id COLLATE "C") > ($1, $2)
		GROUP BY tenant, thread_id ORDER BY tenant COLLATE "C", thread_id COLLATE "C" LIMIT $3`, afterTenant, afterThread, limit)
	if err != nil {
		return nil, wrap(err, "list threads with pending runs")
	}
	defer rows.Close()
	out := []db.PendingThread{}
	for rows.Next() {
		var p db.PendingThread
		var nb *time.Time
		if err := rows.Scan(&p.Tenant, &p.ThreadID, &nb); err != nil {
			return nil, wrap(err, "list threads with pending runs")
		}
		if nb != nil {
			p.NotBefore = utc(*nb)
		}
		out = append(out, p)
	}
	return out, wrap(rows.Err(), "list threads with pending runs")
}

var _ db.TxRunCreator = (*DB)(nil)

// FindRuns lists the tenant's runs that q selects, across threads, newest
// first by (created_at, run_id), after q.Before.
func (d *DB) FindRuns(ctx context.Context, tenant string, q db.RunSearch) ([]db.Run, error) {
	limit, keys, err := dbutil.RunSearch(q)
	if err != nil {
		return nil, err
	}
	args := []any{tenant, q.AssistantID}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	query := `SELECT ` + runCols + ` FROM trellis_runs WHERE tenant = $1 AND assistant_id = $2`
	for _, k := range keys {
		query += ` AND metadata->>` + param(k) + ` = ` + param(q.Metadata[k])
	}
	for _, k := range q.Missing {
		query += ` AND metadata->` + param(k) + ` IS NULL`
	}
	if q.Before != nil {
		query += ` AND (created_at, run_id) < (` + param(q.Before.CreatedAt) + `, ` + param(q.Before.ID) + `)`
	}
	query += ` ORDER BY created_at DESC, run_id DESC LIMIT ` + param(limit)
	out := []db.Run{}
	err = d.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return wrap(err, "find the runs of assistant %q", q.AssistantID)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows, tenant)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return wrap(rows.Err(), "find the runs of assistant %q", q.AssistantID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
