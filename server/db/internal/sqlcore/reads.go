package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// GetAssistantVersion returns version v of the assistant (one read of its
// versions' primary key; db.AssistantVersionGetter); ErrNotFound when the
// assistant or the version does not exist. Its CreatedAt and UpdatedAt
// are when the version was made, as AssistantVersions shows them.
func (s *Store) GetAssistantVersion(ctx context.Context, tenant, id string, v int) (db.Assistant, error) {
	a, _, err := s.scanAssistant(s.d.Reader().QueryRow(ctx, s.q.GetAssistantVersion, tenant, id, v), tenant)
	if s.d.IsNoRows(err) {
		return db.Assistant{}, s.fail(db.ErrNotFound, "assistant %q version %d (tenant %q)", id, v, tenant)
	}
	if err != nil {
		return db.Assistant{}, s.wrap(err, "get version %d of assistant %q", v, id)
	}
	return a, nil
}

// ResolveAssistant returns the assistant whose ID is idOrGraph, else the
// first assistant (creation order, ties by ID) of the graph idOrGraph, in
// one read (db.AssistantResolver); ErrNotFound when there is neither.
func (s *Store) ResolveAssistant(ctx context.Context, tenant, idOrGraph string) (db.Assistant, error) {
	return getOne(ctx, s, s.d.Reader(), "assistant or graph", tenant, idOrGraph, rowOnly(s.assistantScan(tenant)), s.q.ResolveAssistant)
}

// NextPendingRun is NextPending that also reports whether a run of the
// thread is running and returns the run's assistant as it is now, all in
// one statement (db.PendingReader). ok is false when the run names an
// assistant version (its assistant is that version, read apart) or its
// assistant is gone.
func (s *Store) NextPendingRun(ctx context.Context, tenant, threadID string, now time.Time) (db.Run, bool, db.Assistant, bool, error) {
	var (
		running        bool
		a              db.Assistant
		config, cx, md []byte
	)
	r, err := s.scanRun(s.d.Reader().QueryRow(ctx, s.q.NextPendingRun, tenant, threadID, s.d.Time(now)), tenant,
		&running, &a.ID, &a.GraphID, &a.Name, &a.Description, &config, &cx, &md, &a.Version,
		s.d.ScanTime(&a.CreatedAt), s.d.ScanTime(&a.UpdatedAt))
	if s.d.IsNoRows(err) {
		return db.Run{}, false, db.Assistant{}, false, s.fail(db.ErrNotFound, "no pending run of thread %q (tenant %q) is due", threadID, tenant)
	}
	if err != nil {
		return db.Run{}, false, db.Assistant{}, false, s.wrap(err, "next pending run of thread %q", threadID)
	}
	if a.ID == "" || r.AssistantVersion > 0 {
		return r, running, db.Assistant{}, false, nil
	}
	if a.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Run{}, false, db.Assistant{}, false, s.fail(err, "assistant %q (tenant %q)", a.ID, tenant)
	}
	a.Config, a.Context = config, cx
	return r, running, a, true, nil
}

// PendingAfter reports whether a pending run of the thread is due now and
// when the earliest of those not yet due may start (zero: none), in one
// statement (db.PendingPeeker). A thread that does not exist has neither.
func (s *Store) PendingAfter(ctx context.Context, tenant, threadID string, now time.Time) (bool, time.Time, error) {
	var (
		due  bool
		next time.Time
	)
	err := s.d.Reader().QueryRow(ctx, s.q.PendingAfter, tenant, threadID, s.d.Time(now)).Scan(&due, s.d.ScanTime(&next))
	return due, next, s.wrap(err, "pending runs of thread %q", threadID)
}

// extraRow is a Row whose Scan also fills extra, after the columns its
// caller asks for: a scan of a table's columns reused for a statement that
// returns more.
type extraRow struct {
	Row
	extra []any
}

func (r extraRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// GetThreadForRun is GetThread with what a new run of the thread needs to
// know of its runs, in one statement (db.ThreadRunReader): the assistant
// and version of its newest run, and whether a run of it is live.
func (s *Store) GetThreadForRun(ctx context.Context, tenant, id string) (db.Thread, db.ThreadRuns, error) {
	var (
		assistant *string
		version   *int64
		tr        db.ThreadRuns
	)
	row := extraRow{s.d.Reader().QueryRow(ctx, s.q.GetThreadForRun, tenant, id), []any{&assistant, &version, &tr.Live}}
	t, _, err := s.scanThread(row, tenant)
	if s.d.IsNoRows(err) {
		return db.Thread{}, db.ThreadRuns{}, s.notFound("thread", id, tenant)
	}
	if err != nil {
		return db.Thread{}, db.ThreadRuns{}, s.wrap(err, "get thread %q", id)
	}
	if assistant != nil {
		tr.LatestAssistant = *assistant
	}
	if version != nil {
		tr.LatestVersion = int(*version)
	}
	return t, tr, nil
}
