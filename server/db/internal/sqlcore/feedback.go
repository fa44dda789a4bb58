package sqlcore

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanFeedback reads ID, thread ID, run ID, key, score, value, comment,
// correction, message ID, creation time and source.
func (s *Store) scanFeedback(r Row) (db.Feedback, error) {
	var f db.Feedback
	var score, value, correction []byte
	if err := r.Scan(&f.ID, &f.ThreadID, &f.RunID, &f.Key, &score, &value, &f.Comment, &correction, &f.MessageID, s.d.ScanTime(&f.CreatedAt), &f.Source); err != nil {
		return db.Feedback{}, err
	}
	var err error
	if f.Score, err = dbutil.DecodeScore(score); err != nil {
		return db.Feedback{}, fmt.Errorf("feedback %q: score: %w", f.ID, err)
	}
	if len(value) > 0 {
		f.Value = value
	}
	if len(correction) > 0 {
		f.Correction = correction
	}
	return f, nil
}

// feedbackRun checks that the run exists (on the thread, when one is
// named), locking it when lock is set.
func (s *Store) runExists(ctx context.Context, tx Conn, tenant, threadID, runID string, lock bool) error {
	query := s.q.RunExists
	if lock {
		query = s.q.RunExistsForUpdate
	}
	var one int
	err := tx.QueryRow(ctx, query, tenant, runID, threadID).Scan(&one)
	switch {
	case s.d.IsNoRows(err) && threadID != "":
		return s.fail(db.ErrNotFound, "run %q of thread %q (tenant %q)", runID, threadID, tenant)
	case s.d.IsNoRows(err):
		return s.notFound("run", runID, tenant)
	}
	return s.wrap(err, "get run %q", runID)
}

// CreateFeedback stores feedback on a run of the tenant.
func (s *Store) CreateFeedback(ctx context.Context, tenant string, f db.Feedback) (db.Feedback, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Feedback{}, err
	}
	score, value, correction, err := dbutil.Feedback(f)
	if err != nil {
		return db.Feedback{}, err
	}
	if f.ID == "" {
		f.ID = dbutil.NewID()
	}
	var out db.Feedback
	err = s.d.Write(ctx, func(tx Conn) error {
		if err := s.runExists(ctx, tx, tenant, f.ThreadID, f.RunID, true); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, s.q.CountFeedback, tenant, f.RunID).Scan(&n); err != nil {
			return s.wrap(err, "count feedback of run %q", f.RunID)
		}
		if n >= db.MaxRunFeedback {
			return dbutil.Invalid("run %q has %d feedback entries, the most one run keeps", f.RunID, n)
		}
		var err error
		out, err = s.scanFeedback(tx.QueryRow(ctx, s.q.InsertFeedback, tenant, f.ID, f.ThreadID, f.RunID, f.Key,
			nullBytes(score), nullBytes(value), f.Comment, nullBytes(correction), f.MessageID, s.d.Time(dbutil.Now()), f.SourceOrDefault()))
		if s.d.IsUnique(err) {
			return s.fail(db.ErrConflict, "feedback %q", f.ID)
		}
		return s.wrap(err, "create feedback on run %q", f.RunID)
	})
	return out, err
}

// ListFeedback lists a run's feedback, oldest first.
func (s *Store) ListFeedback(ctx context.Context, tenant, threadID, runID string) ([]db.Feedback, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	var out []db.Feedback
	err := s.d.Read(ctx, func(tx Conn) error {
		if err := s.runExists(ctx, tx, tenant, threadID, runID, false); err != nil {
			return err
		}
		var err error
		out, err = collect(ctx, tx, s.scanFeedback, s.q.ListFeedback, tenant, runID)
		return s.wrap(err, "list feedback of run %q (tenant %q)", runID, tenant)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteFeedback deletes one feedback entry of a run.
func (s *Store) DeleteFeedback(ctx context.Context, tenant, threadID, runID, feedbackID string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	n, err := s.d.Exec(ctx, s.q.DeleteFeedback, tenant, threadID, runID, feedbackID)
	if err != nil {
		return s.wrap(err, "delete feedback %q", feedbackID)
	}
	if n == 0 {
		return s.notFound("feedback", feedbackID, tenant)
	}
	return nil
}
