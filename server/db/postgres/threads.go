package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// The thread glue below stays here for runs.go and finish.go, which call
// it inside their own transactions; the rest of the threads store is in
// sqlcore (queries/threads.sql).

const threadCols = `thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at`

// extendExpiry is the SET clause that moves a thread's expiry to its TTL
// after the time in parameter n: every activity runs it.
func extendExpiry(n int) string {
	return fmt.Sprintf(`expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE $%d::timestamptz + ttl_us * interval '1 microsecond' END`, n)
}

// scanThread reads a row of threadCols; an undecodable row is an error
// naming it.
func scanThread(s scanner, tenant string) (db.Thread, error) {
	var t db.Thread
	var md, values, interrupts []byte
	var ttl *int64
	var strategy string
	var expires *time.Time
	if err := s.Scan(&t.ID, &t.Status, &md, &values, &interrupts, &t.Error, &t.CreatedAt, &t.UpdatedAt, &ttl, &strategy, &expires); err != nil {
		return db.Thread{}, err
	}
	var err error
	if t.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Thread{}, fmt.Errorf("server/db/postgres: thread %q (tenant %q): %w", t.ID, tenant, err)
	}
	t.Values, t.Interrupts = values, interrupts
	t.CreatedAt, t.UpdatedAt = utc(t.CreatedAt), utc(t.UpdatedAt)
	t.TTL = dbutil.ScanTTL(ttl, strategy)
	if expires != nil {
		t.ExpiresAt = utc(*expires)
	}
	return t, nil
}

func getThread(ctx context.Context, q querier, tenant, id string) (db.Thread, error) {
	t, err := scanThread(q.QueryRow(ctx, `SELECT `+threadCols+` FROM trellis_threads WHERE tenant = $1 AND thread_id = $2`, tenant, id), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Thread{}, notFound("thread", id, tenant)
	}
	if err != nil {
		return db.Thread{}, wrap(err, "get thread %q", id)
	}
	return t, nil
}

// setThreadResultTx checks r and stores it as thread id's result in tx.
func setThreadResultTx(ctx context.Context, tx pgx.Tx, tenant, id string, r db.ThreadResult) error {
	if err := dbutil.ThreadStatus(r.Status, false); err != nil {
		return err
	}
	values, err := dbutil.OptionalJSON("values", r.Values)
	if err != nil {
		return err
	}
	var interrupts []byte
	if r.Interrupts != nil {
		if interrupts, err = dbutil.Object("interrupts", r.Interrupts); err != nil {
			return err
		}
	}
	tag, err := tx.Exec(ctx, `UPDATE trellis_threads SET status = $1, error = $2,
		thread_values = CASE WHEN $3 THEN $4::jsonb ELSE thread_values END,
		interrupts = coalesce($5::jsonb, interrupts), updated_at = $6, `+extendExpiry(6)+` WHERE tenant = $7 AND thread_id = $8`,
		r.Status, r.Error, r.Values != nil, values, interrupts, dbutil.Now(), tenant, id)
	if err != nil {
		return wrap(err, "set the result of thread %q", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("thread", id, tenant)
	}
	return nil
}
