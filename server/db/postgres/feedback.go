package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const feedbackCols = `feedback_id, thread_id, run_id, key, score::text, value::text, comment, correction::text, message_id, source, created_at`

func scanFeedback(s scanner) (db.Feedback, error) {
	var f db.Feedback
	var score, value, correction []byte
	if err := s.Scan(&f.ID, &f.ThreadID, &f.RunID, &f.Key, &score, &value, &f.Comment, &correction, &f.MessageID, &f.Source, &f.CreatedAt); err != nil {
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
	f.CreatedAt = utc(f.CreatedAt)
	return f, nil
}

// nullJSON passes stored JSON as text, nil as NULL.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
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
	var out db.Feedback
	err = d.write(ctx, func(tx pgx.Tx) error {
		// Locking the run orders concurrent creations, so the count holds.
		if _, err := getRun(ctx, tx, tenant, f.ThreadID, f.RunID, true); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM trellis_run_feedback WHERE tenant = $1 AND run_id = $2`, tenant, f.RunID).Scan(&n); err != nil {
			return wrap(err, "count feedback of run %q", f.RunID)
		}
		if n >= db.MaxRunFeedback {
			return dbutil.Invalid("run %q has %d feedback entries, the most one run keeps", f.RunID, n)
		}
		var err error
		out, err = scanFeedback(tx.QueryRow(ctx, `INSERT INTO trellis_run_feedback (tenant, feedback_id, thread_id, run_id, key, score, value, comment, correction, message_id, source, created_at)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9::jsonb, $10, $11, $12) RETURNING `+feedbackCols,
			tenant, f.ID, f.ThreadID, f.RunID, f.Key, nullJSON(score), nullJSON(value), f.Comment, nullJSON(correction), f.MessageID, f.SourceOrDefault(), dbutil.Now()))
		if isUnique(err, "") {
			return fmt.Errorf("server/db/postgres: feedback %q: %w", f.ID, db.ErrConflict)
		}
		return wrap(err, "create feedback on run %q", f.RunID)
	})
	return out, err
}

// ListFeedback lists a run's feedback, oldest first.
func (d *DB) ListFeedback(ctx context.Context, tenant, threadID, runID string) ([]db.Feedback, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	out := []db.Feedback{}
	err := d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getRun(ctx, tx, tenant, threadID, runID, false); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+feedbackCols+` FROM trellis_run_feedback WHERE tenant = $1 AND run_id = $2
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
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_run_feedback WHERE tenant = $1 AND thread_id = $2 AND run_id = $3 AND feedback_id = $4`,
		tenant, threadID, runID, feedbackID)
	if err != nil {
		return wrap(err, "delete feedback %q", feedbackID)
	}
	if tag.RowsAffected() == 0 {
		return notFound("feedback", feedbackID, tenant)
	}
	return nil
}
