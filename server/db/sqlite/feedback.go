package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const feedbackCols = `feedback_id, thread_id, run_id, key, score, value, comment, correction, message_id, source, created_at`

func scanFeedback(s scanner) (db.Feedback, error) {
	var f db.Feedback
	var score, value, correction []byte
	var created int64
	if err := s.Scan(&f.ID, &f.ThreadID, &f.RunID, &f.Key, &score, &value, &f.Comment, &correction, &f.MessageID, &f.Source, &created); err != nil {
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
	f.CreatedAt = fromMicros(created)
	return f, nil
}

// CreateFeedback stores feedback on a run of the tenant.
func (d *DB) CreateFeedback(ctx context.Context, tenant string, f db.Feedback) (db.Feedback, error) {
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
	f.CreatedAt = dbutil.Now()
	f.Source = f.SourceOrDefault()
	err = d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getRun(ctx, tx, tenant, f.ThreadID, f.RunID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM trellis_run_feedback WHERE tenant = ? AND run_id = ?`, tenant, f.RunID).Scan(&n); err != nil {
			return wrap(err, "count feedback of run %q", f.RunID)
		}
		if n >= db.MaxRunFeedback {
			return dbutil.Invalid("run %q has %d feedback entries, the most one run keeps", f.RunID, n)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO trellis_run_feedback (tenant, `+feedbackCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, f.ID, f.ThreadID, f.RunID, f.Key, score, value, f.Comment, correction, f.MessageID, f.Source, micros(f.CreatedAt))
		if isUnique(err) {
			return wrap(db.ErrConflict, "feedback %q", f.ID)
		}
		return wrap(err, "create feedback on run %q", f.RunID)
	})
	if err != nil {
		return db.Feedback{}, err
	}
	f.Score, _ = dbutil.DecodeScore(score)
	f.Value, f.Correction = value, correction
	return f, nil
}

// ListFeedback lists a run's feedback, oldest first.
func (d *DB) ListFeedback(ctx context.Context, tenant, threadID, runID string) ([]db.Feedback, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	out := []db.Feedback{}
	err := d.read(ctx, func(tx *sql.Tx) error {
		if _, err := getRun(ctx, tx, tenant, threadID, runID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+feedbackCols+` FROM trellis_run_feedback WHERE tenant = ? AND run_id = ?
			ORDER BY created_at, feedback_id`, tenant, runID)
		if err != nil {
			return wrap(err, "list feedback of run %q", runID)
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFeedback(rows)
			if err != nil {
				return wrap(err, "list feedback of run %q (tenant %q)", runID, tenant)
			}
			out = append(out, f)
		}
		return wrap(rows.Err(), "list feedback of run %q", runID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteFeedback deletes one feedback entry of a run.
func (d *DB) DeleteFeedback(ctx context.Context, tenant, threadID, runID, feedbackID string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trellis_run_feedback WHERE tenant = ? AND thread_id = ? AND run_id = ? AND feedback_id = ?`,
			tenant, threadID, runID, feedbackID)
		if err != nil {
			return wrap(err, "delete feedback %q", feedbackID)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("feedback", feedbackID, tenant)
		}
		return nil
	})
}
