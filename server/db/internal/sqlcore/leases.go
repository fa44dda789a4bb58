package sqlcore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// ClaimRun moves a pending run to running and gives owner a lease for ttl
// with the run's next token (1 for the first claim). A run whose NotBefore
// is still ahead, or that is not pending, is ErrConflict; a thread with
// another running run is ErrBusy — also when two claimers race, which the
// partial unique index on running runs decides.
func (s *Store) ClaimRun(ctx context.Context, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	return s.ClaimRunWithin(ctx, tenant, runID, owner, ttl, 0)
}

// ClaimRunWithin is ClaimRun that also fails with db.ErrTenantBusy when
// the tenant has max runs running already (max <= 0: no cap), counted in
// the claim's transaction; see db.RunLimiter.
func (s *Store) ClaimRunWithin(ctx context.Context, tenant, runID, owner string, ttl time.Duration, max int) (db.Run, db.Lease, error) {
	if err := checkClaim(owner, ttl); err != nil {
		return db.Run{}, db.Lease{}, err
	}
	var (
		run   db.Run
		lease db.Lease
	)
	err := s.d.Write(ctx, func(tx Conn) error {
		var err error
		run, lease, err = s.claimRun(ctx, tx, tenant, runID, owner, ttl, max)
		return err
	})
	if err != nil {
		return db.Run{}, db.Lease{}, err
	}
	return run, lease, nil
}

// ClaimRunTx is ClaimRun inside tx (the database's own open write
// transaction), the transaction of a run's first step, which the caller
// commits: see db.TxClaimer.
func (s *Store) ClaimRunTx(ctx context.Context, tx any, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return db.Run{}, db.Lease{}, s.wrap(err, "ClaimRunTx")
	}
	if err := checkClaim(owner, ttl); err != nil {
		return db.Run{}, db.Lease{}, err
	}
	return s.claimRun(ctx, c, tenant, runID, owner, ttl, 0)
}

// checkClaim checks a claim's owner and lease TTL.
func checkClaim(owner string, ttl time.Duration) error {
	if err := dbutil.TTL(ttl); err != nil {
		return err
	}
	if owner == "" {
		return dbutil.Invalid("the lease owner is empty")
	}
	return nil
}

// claimRun is the claim of ClaimRunWithin in c.
func (s *Store) claimRun(ctx context.Context, c Conn, tenant, runID, owner string, ttl time.Duration, max int) (db.Run, db.Lease, error) {
	if max <= 0 {
		return s.claimPending(ctx, c, tenant, runID, owner, ttl)
	}
	r, err := s.getRun(ctx, c, tenant, "", runID, true)
	if err != nil {
		return db.Run{}, db.Lease{}, err
	}
	now := dbutil.Now()
	if r.Status != db.RunPending {
		return db.Run{}, db.Lease{}, s.fail(db.ErrConflict, "claim run %q: it is %s, not pending", runID, r.Status)
	}
	if r.NotBefore.After(now) {
		return db.Run{}, db.Lease{}, s.fail(db.ErrConflict, "claim run %q: it may not start before %s", runID, r.NotBefore.Format(time.RFC3339Nano))
	}
	var running string
	err = c.QueryRow(ctx, s.q.RunningRun, tenant, r.ThreadID).Scan(&running)
	if err == nil {
		return db.Run{}, db.Lease{}, s.fail(db.ErrBusy, "claim run %q: run %q of thread %q is running", runID, running, r.ThreadID)
	}
	if !s.d.IsNoRows(err) {
		return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q", runID)
	}
	// The tenant's claims take turns (SQLite's writers always do; on
	// PostgreSQL LockRunSlots takes a transaction lock), so the count,
	// read after it, includes every claim committed before.
	if max > 0 {
		if s.q.LockRunSlots != "" {
			if _, err := c.Exec(ctx, s.q.LockRunSlots, tenant); err != nil {
				return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q: lock the tenant's run slots", runID)
			}
		}
		var n int
		if err := c.QueryRow(ctx, s.q.CountRunning, tenant).Scan(&n); err != nil {
			return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q: count the tenant's running runs", runID)
		}
		if n >= max {
			return db.Run{}, db.Lease{}, s.fail(db.ErrTenantBusy, "claim run %q: tenant %q has %d running runs, its limit", runID, tenant, n)
		}
	}
	var token, seq int64
	// The claim returns the run as it leaves it (the statements after it
	// do not change the run's row), so the claim reads it no second time.
	// The lease is on the run's row: the same UPDATE writes it.
	n := txhook.Want(ctx, s.d.Unwrap(c), tenant, runID)
	exp := now.Add(ttl).Truncate(time.Microsecond)
	run, err := s.scanRun(c.QueryRow(ctx, s.q.ClaimRun, s.d.Time(now), tenant, runID, n, owner, s.d.Time(exp)), tenant, &token, &seq)
	if err != nil {
		if s.d.IsUnique(err) {
			return db.Run{}, db.Lease{}, s.fail(db.ErrBusy, "claim run %q: thread %q has a running run", runID, r.ThreadID)
		}
		if s.d.IsNoRows(err) {
			return db.Run{}, db.Lease{}, s.preClaimedElsewhere(ctx, c, tenant, runID)
		}
		return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q", runID)
	}
	txhook.Reserve(ctx, s.d.Unwrap(c), tenant, runID, seq)
	lease := db.Lease{Tenant: tenant, RunID: runID, ThreadID: r.ThreadID, Owner: owner, Token: token, ExpiresAt: exp}
	if err := execLater(ctx, c, s.q.MarkThreadBusy, tenant, r.ThreadID); err != nil {
		return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q: mark its thread busy", runID)
	}
	return run, lease, nil
}

// claimPending is claimRun with no cap on the tenant's running runs: the
// run is set running only if it is pending and due, in one statement that
// needs no read before it (the one-running index refuses a second running
// run of the thread). The run is read only when it was not claimed, to
// say why.
func (s *Store) claimPending(ctx context.Context, c Conn, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	now := dbutil.Now()
	var token, seq int64
	// The claim also reserves the Seq numbers of the events appended with
	// it, when its caller asked (txhook.WithSeqs): no bump of its own. It
	// writes the lease on the run's row, replacing a pre-claim.
	n := txhook.Want(ctx, s.d.Unwrap(c), tenant, runID)
	exp := now.Add(ttl).Truncate(time.Microsecond)
	// Where the dialect can, the same statement sets the thread busy.
	q, marked := s.q.ClaimPendingRun, s.q.ClaimPendingRunMarkBusy != ""
	if marked {
		q = s.q.ClaimPendingRunMarkBusy
	}
	run, err := s.scanRun(c.QueryRow(ctx, q, s.d.Time(now), tenant, runID, n, owner, s.d.Time(exp)), tenant, &token, &seq)
	switch {
	case err != nil && s.d.IsUnique(err):
		return db.Run{}, db.Lease{}, s.fail(db.ErrBusy, "claim run %q: its thread has a running run", runID)
	case err != nil && s.d.IsNoRows(err):
		r, err := s.getRun(ctx, c, tenant, "", runID, false)
		switch {
		case err != nil:
			return db.Run{}, db.Lease{}, err
		case r.Status != db.RunPending:
			return db.Run{}, db.Lease{}, s.fail(db.ErrConflict, "claim run %q: it is %s, not pending", runID, r.Status)
		case r.NotBefore.After(now):
			return db.Run{}, db.Lease{}, s.fail(db.ErrConflict, "claim run %q: it may not start before %s", runID, r.NotBefore.Format(time.RFC3339Nano))
		default:
			return db.Run{}, db.Lease{}, s.preClaimedElsewhere(ctx, c, tenant, runID)
		}
	case err != nil:
		return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q", runID)
	}
	txhook.Reserve(ctx, s.d.Unwrap(c), tenant, runID, seq)
	lease := db.Lease{Tenant: tenant, RunID: runID, ThreadID: run.ThreadID, Owner: owner, Token: token, ExpiresAt: exp}
	if marked {
		return run, lease, nil
	}
	if err := execLater(ctx, c, s.q.MarkThreadBusy, tenant, run.ThreadID); err != nil {
		return db.Run{}, db.Lease{}, s.wrap(err, "claim run %q: mark its thread busy", runID)
	}
	return run, lease, nil
}

// preClaimedElsewhere is the error of a claim refused because another
// owner's pre-claim of the run is live: that owner's process may be
// executing the run before its claim (db.ErrBusy: try again later).
func (s *Store) preClaimedElsewhere(ctx context.Context, c Conn, tenant, runID string) error {
	var (
		holder string
		until  time.Time
	)
	if err := c.QueryRow(ctx, s.q.PreClaimHolder, tenant, runID).Scan(&holder, s.d.ScanTime(&until)); err != nil {
		if s.d.IsNoRows(err) {
			return s.fail(db.ErrConflict, "claim run %q (tenant %q): it changed while it was claimed", runID, tenant)
		}
		return s.wrap(err, "claim run %q: read its pre-claim", runID)
	}
	return s.fail(db.ErrBusy, "claim run %q (tenant %q): %q holds its pre-claim until %s", runID, tenant, holder, until.Format(time.RFC3339Nano))
}

// leaseLost is the error for a fenced write whose lease no longer holds.
func (s *Store) leaseLost(l db.Lease) error {
	return s.fail(db.ErrLeaseLost, "run %q (tenant %q): lease token %d of %q no longer holds the run", l.RunID, l.Tenant, l.Token, l.Owner)
}

// fence checks, inside a write transaction, that l still holds its run,
// locking the run's row until the transaction ends where the dialect
// needs it, so a take-over waits for the fenced write. raw is the
// caller's own transaction handle (nil when this store opened it): when
// ctx says raw already checked l (txhook.WithFenced), the run's row is
// already held for the rest of raw and the check reads nothing.
func (s *Store) fence(ctx context.Context, c Conn, raw any, l db.Lease) error {
	if raw != nil && txhook.Fenced(ctx, raw, l.Tenant, l.RunID, l.Token) {
		return nil
	}
	var token int64
	err := c.QueryRow(ctx, s.q.LeaseToken, l.Tenant, l.RunID).Scan(&token)
	if s.d.IsNoRows(err) || (err == nil && token != l.Token) {
		return s.leaseLost(l)
	}
	return s.wrap(err, "check the lease of run %q", l.RunID)
}

// RenewLease sets the lease's expiry to now + ttl (and always later than
// before, so a sweeper that read the old expiry cannot take the run
// over); ErrLeaseLost when its token no longer holds the run. An expired
// lease that nobody took over can still be renewed.
func (s *Store) RenewLease(ctx context.Context, l db.Lease, ttl time.Duration) (db.Lease, error) {
	if err := dbutil.TTL(ttl); err != nil {
		return db.Lease{}, err
	}
	err := s.d.WriteOne(ctx, func(c Conn) error {
		var exp time.Time
		err := c.QueryRow(ctx, s.q.RenewLease, s.d.Time(dbutil.Now().Add(ttl)), l.Tenant, l.RunID, l.Token).Scan(s.d.ScanTime(&exp))
		if s.d.IsNoRows(err) {
			return s.leaseLost(l)
		}
		if err != nil {
			return s.wrap(err, "renew the lease of run %q", l.RunID)
		}
		l.ExpiresAt = exp
		return nil
	})
	if err != nil {
		return db.Lease{}, err
	}
	return l, nil
}

// ExpiredLeases lists the leases (of every tenant) whose expiry is not
// after now, soonest expired first, at most limit (0: all).
func (s *Store) ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]db.Lease, error) {
	if limit < 0 {
		return nil, dbutil.Invalid("limit %d must not be negative", limit)
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	out, err := collect(ctx, s.d.Reader(), func(r Row) (db.Lease, error) {
		var l db.Lease
		err := r.Scan(&l.Tenant, &l.RunID, &l.ThreadID, &l.Owner, &l.Token, s.d.ScanTime(&l.ExpiresAt))
		return l, err
	}, s.q.ExpiredLeases, s.d.Time(now), lim)
	if err != nil {
		return nil, s.wrap(err, "list expired leases")
	}
	return out, nil
}

// TakeOver gives the run of an expired lease (as ExpiredLeases returned
// it) to owner with the next token, for ttl. It is ErrLeaseLost when the
// lease changed since it was read: renewed, taken over, or ended.
func (s *Store) TakeOver(ctx context.Context, expired db.Lease, owner string, ttl time.Duration) (db.Lease, error) {
	if err := checkClaim(owner, ttl); err != nil {
		return db.Lease{}, err
	}
	l := expired
	// One statement: the lease and the token are the run's row's.
	err := s.d.WriteOne(ctx, func(c Conn) error {
		now := dbutil.Now()
		exp := now.Add(ttl).Truncate(time.Microsecond)
		err := c.QueryRow(ctx, s.q.TakeOverLease, owner, s.d.Time(exp), expired.Tenant, expired.RunID, expired.Token,
			s.d.Time(expired.ExpiresAt), s.d.Time(now)).Scan(&l.Token, &l.ThreadID)
		if s.d.IsNoRows(err) {
			return s.fail(db.ErrLeaseLost, "take over run %q (tenant %q): the lease changed since it was read", expired.RunID, expired.Tenant)
		}
		if err != nil {
			return s.wrap(err, "take over run %q", expired.RunID)
		}
		l.Owner, l.ExpiresAt = owner, exp
		return nil
	})
	if err != nil {
		return db.Lease{}, err
	}
	return l, nil
}

// FinishRun records a terminal status, usage (JSON or empty) and error
// message on the lease's run and ends the lease; ErrLeaseLost when the
// lease no longer holds the run.
func (s *Store) FinishRun(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string) (db.Run, error) {
	u, err := checkFinish(status, usage)
	if err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err = s.d.Write(ctx, func(tx Conn) error {
		var err error
		out, err = s.finishRun(ctx, tx, l, status, u, errMsg, true)
		return err
	})
	return out, err
}

// checkFinish checks a finish's status and returns its usage as stored.
func checkFinish(status db.RunStatus, usage json.RawMessage) ([]byte, error) {
	if err := dbutil.TerminalStatus(status); err != nil {
		return nil, err
	}
	return dbutil.OptionalJSON("usage", usage)
}

// finishRun checks the lease and ends its run in c, returning the run as
// stored. With free it also frees the thread when still busy; a caller
// that sets the thread's result in the same transaction passes false,
// since that result's status replaces whatever this would set.
func (s *Store) finishRun(ctx context.Context, c Conn, l db.Lease, status db.RunStatus, u []byte, errMsg string, free bool) (db.Run, error) {
	// EndRun checks the lease itself (no row: lost), also where the
	// transaction checked it already (txhook.WithFenced): the check is a
	// condition of the UPDATE, not a statement, and the UPDATE ends the
	// lease (it is on the run's row). It reserves the Seq numbers
	// of the events appended with it when its caller asked
	// (txhook.WithSeqs), so neither needs a statement of its own. The
	// reservation is keyed by the driver's own handle.
	tx := s.d.Unwrap(c)
	n := txhook.Want(ctx, tx, l.Tenant, l.RunID)
	var seq int64
	run, err := s.scanRun(c.QueryRow(ctx, s.q.EndRun, string(status), u, errMsg, s.d.Time(dbutil.Now()), l.Tenant, l.RunID, n, l.Token), l.Tenant, &seq)
	if s.d.IsNoRows(err) {
		return db.Run{}, s.leaseLost(l)
	}
	if err != nil {
		return db.Run{}, s.wrap(err, "finish run %q", l.RunID)
	}
	txhook.Reserve(ctx, tx, l.Tenant, l.RunID, seq)
	if free {
		// A thread still busy (its outcome not recorded with
		// SetThreadResult) is no longer.
		if err := execLater(ctx, c, s.q.FreeThread, string(dbutil.AfterRun(status)), l.Tenant, l.ThreadID); err != nil {
			return db.Run{}, s.wrap(err, "finish run %q: free its thread", l.RunID)
		}
	}
	return run, nil
}
