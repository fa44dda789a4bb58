package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

var (
	_ db.TxRunCreator = (*Store)(nil)
	_ db.TxClaimer    = (*Store)(nil)
	_ db.RunLimiter   = (*Store)(nil)
)

// scanRun reads a run's ID, thread ID, assistant ID, status, metadata,
// kwargs, multitask strategy, usage, error, creation and update times,
// not-before (NULL: none), cancel request and assistant version (NULL:
// none), then into extra the columns a statement returns after those;
// an undecodable row is an error naming it.
func (s *Store) scanRun(r Row, tenant string, extra ...any) (db.Run, error) {
	var run db.Run
	var status string
	var md, kwargs, usage []byte
	var version *int64
	dest := append([]any{&run.ID, &run.ThreadID, &run.AssistantID, &status, &md, &kwargs, &run.MultitaskStrategy, &usage, &run.Error,
		s.d.ScanTime(&run.CreatedAt), s.d.ScanTime(&run.UpdatedAt), s.d.ScanTime(&run.NotBefore), &run.CancelRequested, &version}, extra...)
	if err := r.Scan(dest...); err != nil {
		return db.Run{}, err
	}
	run.Status = db.RunStatus(status)
	if version != nil {
		run.AssistantVersion = int(*version)
	}
	var err error
	if run.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Run{}, s.fail(err, "run %q of thread %q (tenant %q)", run.ID, run.ThreadID, tenant)
	}
	run.Kwargs, run.Usage = kwargs, usage
	return run, nil
}

func (s *Store) runScan(tenant string) func(Row) (db.Run, error) {
	return func(r Row) (db.Run, error) { return s.scanRun(r, tenant) }
}

// getRun reads a run of the tenant; threadID "" matches any thread. lock
// takes the row's lock for the rest of the transaction where the dialect
// needs it.
func (s *Store) getRun(ctx context.Context, c Conn, tenant, threadID, runID string, lock bool) (db.Run, error) {
	r, err := s.scanRun(c.QueryRow(ctx, locked(lock, s.q.GetRun, s.q.GetRunForUpdate), tenant, runID, threadID), tenant)
	if s.d.IsNoRows(err) {
		if threadID != "" {
			return db.Run{}, s.fail(db.ErrNotFound, "run %q of thread %q (tenant %q)", runID, threadID, tenant)
		}
		return db.Run{}, s.notFound("run", runID, tenant)
	}
	if err != nil {
		return db.Run{}, s.wrap(err, "get run %q", runID)
	}
	return r, nil
}

// CreateRun stores a pending run (an empty ID gets a new UUID) on an
// existing thread (ErrNotFound otherwise). Status, Usage, Error and
// CancelRequested are ignored; Kwargs must be JSON ({} when empty). A taken
// ID is ErrConflict.
func (s *Store) CreateRun(ctx context.Context, tenant string, r db.Run) (db.Run, error) {
	nr, err := newRun(tenant, r)
	if err != nil {
		return db.Run{}, err
	}
	var out db.Run
	err = s.d.Write(ctx, func(tx Conn) error {
		var err error
		out, err = s.createRun(ctx, tx, tenant, nr, false, nil, nil)
		return err
	})
	return out, err
}

// CreateRunTx is CreateRun, after creating thread when it is not nil and
// missing, inside tx (the database's own open write transaction: a *sql.Tx
// for SQLite, a pgx.Tx for PostgreSQL) that the caller commits: see
// db.TxRunCreator.
func (s *Store) CreateRunTx(ctx context.Context, tx any, tenant string, thread *db.Thread, r db.Run) (db.Run, error) {
	return s.createRunTx(ctx, tx, tenant, thread, r, nil)
}

// CreateTaggedRunTx is CreateRunTx that records tag in the thread's
// metadata too (db.TxThreadTagger): in the run's own statement where the
// dialect tags on accept (Dialect.TagsInAccept), else with TagThread in
// the same transaction; a thread created here is created with it.
func (s *Store) CreateTaggedRunTx(ctx context.Context, tx any, tenant string, thread *db.Thread, r db.Run, tag db.ThreadTag) (db.Run, error) {
	return s.createRunTx(ctx, tx, tenant, thread, r, &tag)
}

func (s *Store) createRunTx(ctx context.Context, tx any, tenant string, thread *db.Thread, r db.Run, tag *db.ThreadTag) (db.Run, error) {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return db.Run{}, s.wrap(err, "CreateRunTx")
	}
	nr, err := newRun(tenant, r)
	if err != nil {
		return db.Run{}, err
	}
	if thread != nil && tag != nil {
		t := *thread
		t.Metadata = tagged(thread.Metadata, *tag)
		thread = &t
	}
	// The run's pre-claim, when ctx asks for one, is written by its INSERT.
	p := preClaim(ctx, nr.r)
	var out db.Run
	switch {
	case thread == nil:
		out, err = s.createRun(ctx, c, tenant, nr, false, p, tag)
	case thread.ID != r.ThreadID:
		return db.Run{}, dbutil.Invalid("the new thread %q is not the run's thread %q", thread.ID, r.ThreadID)
	case s.q.InsertThreadAndRun != "":
		out, err = s.createThreadAndRun(ctx, c, tenant, *thread, nr, p, tag)
	default:
		var created bool // whether tx itself created the run's thread
		if created, err = s.createThreadIfMissing(ctx, c, tenant, *thread); err == nil {
			out, err = s.createRun(ctx, c, tenant, nr, created, p, tag)
		}
	}
	if err == nil && p != nil {
		p.Wrote(tenant, out.ID)
	}
	return out, s.d.Classify(err)
}

// tagged is md with tag's graph_id and assistant_id, in a new map.
func tagged(md db.Metadata, tag db.ThreadTag) db.Metadata {
	out := make(db.Metadata, len(md)+2)
	for k, v := range md {
		out[k] = v
	}
	out["graph_id"], out["assistant_id"] = tag.GraphID, tag.AssistantID
	return out
}

// ClassifyTxError wraps a storage failure of the database in a
// transaction the caller committed as the DB's own errors: see
// db.TxRunCreator.
func (s *Store) ClassifyTxError(err error) error { return s.d.Classify(err) }

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

// newThreadRow checks t and encodes its metadata and (empty) interrupts
// for the INSERT of a new idle thread with no TTL.
func newThreadRow(t db.Thread) (md, interrupts []byte, err error) {
	if err := db.CheckID("thread", t.ID); err != nil {
		return nil, nil, err
	}
	if md, err = dbutil.EncodeMetadata(t.Metadata); err != nil {
		return nil, nil, err
	}
	if interrupts, err = dbutil.Object("interrupts", nil); err != nil {
		return nil, nil, err
	}
	return md, interrupts, nil
}

// createThreadIfMissing stores a new idle thread with t's ID and metadata
// and no TTL unless the thread exists, and reports whether it stored it.
// createRun relies on the missing TTL: a thread created so needs no
// expiry update.
func (s *Store) createThreadIfMissing(ctx context.Context, c Conn, tenant string, t db.Thread) (bool, error) {
	md, interrupts, err := newThreadRow(t)
	if err != nil {
		return false, err
	}
	ttl, strategy, err := dbutil.ThreadTTL(nil)
	if err != nil {
		return false, err
	}
	n, err := c.Exec(ctx, s.q.InsertThread, tenant, t.ID, string(db.ThreadIdle), md, nil, interrupts, "",
		s.d.Time(dbutil.Now()), ttl, strategy, nil)
	if err != nil {
		return false, s.wrap(err, "create thread %q", t.ID)
	}
	return n > 0, nil
}

// createThreadAndRun is createThreadIfMissing and createRun in one
// statement (InsertThreadAndRun). A thread it neither inserted nor found
// was inserted or deleted by a transaction that committed after the
// statement began: createRun, a statement of its own, then decides. tag,
// when not nil, is in t's metadata already and is recorded on a thread
// that existed (see insertRunOnThread).
func (s *Store) createThreadAndRun(ctx context.Context, c Conn, tenant string, t db.Thread, nr runRow, p *txhook.PreClaim, tag *db.ThreadTag) (db.Run, error) {
	md, interrupts, err := newThreadRow(t)
	if err != nil {
		return db.Run{}, err
	}
	out, found, err := s.insertRunOnThread(ctx, c, tenant, nr, p, tag, s.q.InsertThreadAndRun, md, interrupts)
	if err != nil && !found {
		return s.createRun(ctx, c, tenant, nr, false, p, tag)
	}
	return out, err
}

// createRun stores the pending run nr in c, with the pre-claim p (nil:
// none) on its row. held says c itself created the run's thread: no
// other transaction can see it, let alone delete it, so the thread needs
// no check or lock, (created with no TTL) no expiry update, and no tag
// (it was created with it). tag, when not nil, is recorded on a thread
// that existed (see insertRunOnThread).
func (s *Store) createRun(ctx context.Context, c Conn, tenant string, nr runRow, held bool, p *txhook.PreClaim, tag *db.ThreadTag) (db.Run, error) {
	if !held {
		out, _, err := s.insertRunOnThread(ctx, c, tenant, nr, p, tag, s.q.InsertRunOnThread)
		return out, err
	}
	r := nr.r
	owner, until := s.preClaimArgs(p)
	// The insert returns the run as stored, so the run is not read again.
	out, err := s.scanRun(c.QueryRow(ctx, s.q.InsertRun, tenant, r.ID, r.ThreadID, r.AssistantID, nr.md, nr.kwargs, r.MultitaskStrategy,
		s.d.Time(dbutil.Now()), s.nullTime(r.NotBefore), nr.version, owner, until), tenant)
	if s.d.IsNoRows(err) {
		return db.Run{}, s.fail(db.ErrConflict, "run %q exists", r.ID)
	}
	if err != nil {
		return db.Run{}, s.wrap(err, "create run %q", r.ID)
	}
	return out, nil
}

// insertRunOnThread runs query (InsertRunOnThread, or InsertThreadAndRun
// with the thread's arguments in more) to store nr on its thread, which
// the statement checks (ErrNotFound when missing) and keeps from being
// deleted until c's transaction ends; a taken run ID is ErrConflict. A
// new run is activity: the thread's expiry moves on, in the statement or
// after it (ExtendThreadExpiry, only when the thread has an expiry).
// When tag is not nil the thread that existed is tagged with it once the
// run is stored: by the statement where the dialect tags on accept (the
// tag's two arguments last, "" for none), else by TagThread after it,
// which moves the expiry too. found says whether the thread was found.
func (s *Store) insertRunOnThread(ctx context.Context, c Conn, tenant string, nr runRow, p *txhook.PreClaim, tag *db.ThreadTag, query string, more ...any) (out db.Run, found bool, err error) {
	r := nr.r
	now := s.d.Time(dbutil.Now())
	owner, until := s.preClaimArgs(p)
	args := append([]any{tenant, r.ID, r.ThreadID, r.AssistantID, nr.md, nr.kwargs, r.MultitaskStrategy, now,
		s.nullTime(r.NotBefore), nr.version, owner, until}, more...)
	inStatement := s.d.TagsInAccept()
	if inStatement {
		var graph, asst string
		if tag != nil {
			graph, asst = tag.GraphID, tag.AssistantID
		}
		args = append(args, graph, asst)
	}
	var stored, extend bool
	out, err = s.scanRun(c.QueryRow(ctx, query, args...), tenant, &found, &stored, &extend)
	if s.d.IsNoRows(err) {
		// Nothing stored, and the dialect does not say why: the thread
		// exists (the run ID is taken) or not.
		var one int
		err = c.QueryRow(ctx, s.q.LockRunThread, tenant, r.ThreadID).Scan(&one)
		found = err == nil
		if s.d.IsNoRows(err) {
			err = nil
		}
	}
	switch {
	case err != nil:
		return db.Run{}, true, s.wrap(err, "create run %q", r.ID)
	case !found:
		return db.Run{}, false, s.notFound("thread", r.ThreadID, tenant)
	case !stored:
		return db.Run{}, true, s.fail(db.ErrConflict, "run %q exists", r.ID)
	}
	switch {
	case tag != nil && !inStatement:
		err = execLater(ctx, c, s.q.TagThread, tag.GraphID, tag.AssistantID, now, tenant, r.ThreadID)
	case extend:
		err = execLater(ctx, c, s.q.ExtendThreadExpiry, now, tenant, r.ThreadID)
	}
	if err != nil {
		return db.Run{}, true, s.wrap(err, "create run %q", r.ID)
	}
	return out, true, nil
}

// GetRun returns the run of the thread.
func (s *Store) GetRun(ctx context.Context, tenant, threadID, runID string) (db.Run, error) {
	return s.getRun(ctx, s.d.Reader(), tenant, threadID, runID, false)
}

// ListRuns lists the thread's runs newest first (creation order), those
// with q.Status when set, paged by q.Limit (10 when 0) and q.Offset. An
// unknown thread is ErrNotFound.
func (s *Store) ListRuns(ctx context.Context, tenant, threadID string, q db.RunQuery) ([]db.Run, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	if err := dbutil.RunStatus(q.Status, true); err != nil {
		return nil, err
	}
	var out []db.Run
	err = s.d.Read(ctx, func(tx Conn) error {
		if _, err := s.getThread(ctx, tx, tenant, threadID); err != nil {
			return err
		}
		var err error
		out, err = collect(ctx, tx, s.runScan(tenant), s.q.ListRuns, tenant, threadID, string(q.Status), limit, offset)
		return s.wrap(err, "list the runs of thread %q", threadID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRun deletes a terminal run with its events; a live run is
// ErrConflict (cancel it first).
func (s *Store) DeleteRun(ctx context.Context, tenant, threadID, runID string) error {
	return s.d.Write(ctx, func(tx Conn) error {
		r, err := s.getRun(ctx, tx, tenant, threadID, runID, true)
		if err != nil {
			return err
		}
		if !r.Status.Terminal() {
			return s.fail(db.ErrConflict, "delete run %q: it is %s; cancel it first", runID, r.Status)
		}
		_, err = tx.Exec(ctx, s.q.DeleteRun, tenant, runID)
		return s.wrap(err, "delete run %q", runID)
	})
}

// NextPending returns the thread's oldest pending run (creation order)
// whose NotBefore is not after now; ErrNotFound when there is none.
func (s *Store) NextPending(ctx context.Context, tenant, threadID string, now time.Time) (db.Run, error) {
	r, err := s.scanRun(s.d.Reader().QueryRow(ctx, s.q.NextPending, tenant, threadID, s.d.Time(now)), tenant)
	if s.d.IsNoRows(err) {
		return db.Run{}, s.fail(db.ErrNotFound, "no pending run of thread %q (tenant %q) is due", threadID, tenant)
	}
	return r, s.wrap(err, "next pending run of thread %q", threadID)
}

// CancelPending ends a pending run with a terminal status; a run that is
// running or already ended is ErrConflict.
func (s *Store) CancelPending(ctx context.Context, tenant, threadID, runID string, status db.RunStatus) (db.Run, error) {
	if err := dbutil.TerminalStatus(status); err != nil {
		return db.Run{}, err
	}
	return s.cancel(ctx, tenant, threadID, runID, func(r db.Run) error {
		if r.Status != db.RunPending {
			return s.fail(db.ErrConflict, "cancel run %q: it is %s, not pending", runID, r.Status)
		}
		return nil
	}, s.q.CancelRun, string(status))
}

// RequestCancel records that the live run is to be cancelled with action
// ("interrupt" or "rollback"); a run already ended is ErrConflict.
func (s *Store) RequestCancel(ctx context.Context, tenant, threadID, runID, action string) (db.Run, error) {
	if err := dbutil.CancelAction(action); err != nil {
		return db.Run{}, err
	}
	return s.cancel(ctx, tenant, threadID, runID, func(r db.Run) error {
		if r.Status.Terminal() {
			return s.fail(db.ErrConflict, "cancel run %q: it already ended (%s)", runID, r.Status)
		}
		return nil
	}, s.q.RequestCancel, action)
}

// cancel locks the run, lets check refuse it, and runs query ($1 value,
// $2 now, $3 tenant, $4 run ID) on it, in one write transaction; it
// returns the run as changed.
func (s *Store) cancel(ctx context.Context, tenant, threadID, runID string, check func(db.Run) error, query, value string) (db.Run, error) {
	var out db.Run
	err := s.d.Write(ctx, func(tx Conn) error {
		r, err := s.getRun(ctx, tx, tenant, threadID, runID, true)
		if err != nil {
			return err
		}
		if err := check(r); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, query, value, s.d.Time(dbutil.Now()), tenant, runID); err != nil {
			return s.wrap(err, "cancel run %q", runID)
		}
		out, err = s.getRun(ctx, tx, tenant, threadID, runID, false)
		return err
	})
	return out, err
}

// PendingThreads lists threads with pending runs across tenants, after
// (afterTenant, afterThread) in byte order, with their earliest start.
func (s *Store) PendingThreads(ctx context.Context, afterTenant, afterThread string, limit int) ([]db.PendingThread, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d must be positive", limit)
	}
	out, err := collect(ctx, s.d.Reader(), func(r Row) (db.PendingThread, error) {
		var p db.PendingThread
		err := r.Scan(&p.Tenant, &p.ThreadID, s.d.ScanTime(&p.NotBefore))
		return p, err
	}, s.q.PendingThreads, afterTenant, afterThread, limit)
	if err != nil {
		return nil, s.wrap(err, "list threads with pending runs")
	}
	return out, nil
}

// FindRuns lists the tenant's runs that q selects, across threads, newest
// first by (created_at, run_id), after q.Before.
func (s *Store) FindRuns(ctx context.Context, tenant string, q db.RunSearch) ([]db.Run, error) {
	limit, keys, err := dbutil.RunSearch(q)
	if err != nil {
		return nil, err
	}
	var args []any
	param := func(v any) string {
		args = append(args, v)
		return s.d.Param(len(args))
	}
	query := s.q.SelectRuns + ` WHERE tenant = ` + param(tenant) + ` AND assistant_id = ` + param(q.AssistantID)
	for _, k := range keys {
		query += ` AND ` + s.d.MemberText("metadata", param(s.d.MemberArg(k))) + ` = ` + param(q.Metadata[k])
	}
	for _, k := range q.Missing {
		query += ` AND ` + s.d.MemberMissing("metadata", param(s.d.MemberArg(k)))
	}
	if q.Before != nil {
		query += ` AND (created_at, run_id) < (` + param(s.d.Time(q.Before.CreatedAt)) + `, ` + param(q.Before.ID) + `)`
	}
	query += ` ORDER BY created_at DESC, run_id DESC LIMIT ` + param(limit)
	var out []db.Run
	err = s.d.Read(ctx, func(tx Conn) error {
		var err error
		out, err = collect(ctx, tx, s.runScan(tenant), query, args...)
		return s.wrap(err, "find the runs of assistant %q", q.AssistantID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
