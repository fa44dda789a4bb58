package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// The thread glue below stays here for runs.go and finish.go, which call
// it inside their own transactions; the rest of the threads store is in
// sqlcore (queries/threads.sql).

const threadCols = `thread_id, status, metadata, thread_values, interrupts, error, created_at, updated_at, ttl_us, ttl_strategy, expires_at`

// extendExpiry is the SET clause that moves a thread's expiry to its TTL
// after now (the one argument, in microseconds): every activity runs it.
const extendExpiry = `expires_at = CASE WHEN ttl_us IS NULL THEN NULL ELSE ? + ttl_us END`

// scanThread reads a row of threadCols; an undecodable row is an error
// naming it.
func scanThread(s scanner, tenant string) (db.Thread, error) {
	t, _, err := scanThreadMD(s, tenant)
	return t, err
}

// scanThreadMD is scanThread that also returns the stored metadata JSON,
// which searches match as stored.
func scanThreadMD(s scanner, tenant string) (db.Thread, []byte, error) {
	var t db.Thread
	var md, values, interrupts []byte
	var created, updated int64
	var ttl, expires *int64
	var strategy string
	if err := s.Scan(&t.ID, &t.Status, &md, &values, &interrupts, &t.Error, &created, &updated, &ttl, &strategy, &expires); err != nil {
		return db.Thread{}, nil, err
	}
	var err error
	if t.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Thread{}, nil, fmt.Errorf("server/db/sqlite: thread %q (tenant %q): %w", t.ID, tenant, err)
	}
	t.Values, t.Interrupts = values, interrupts
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	t.TTL = dbutil.ScanTTL(ttl, strategy)
	if expires != nil {
		t.ExpiresAt = fromMicros(*expires)
	}
	return t, md, nil
}

func getThread(ctx context.Context, q querier, tenant, id string) (db.Thread, error) {
	t, err := scanThread(q.QueryRowContext(ctx, `SELECT `+threadCols+` FROM trellis_threads WHERE tenant = ? AND thread_id = ?`, tenant, id), tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return db.Thread{}, notFound("thread", id, tenant)
	}
	if err != nil {
		return db.Thread{}, wrap(err, "get thread %q", id)
	}
	return t, nil
}

// setThreadResultTx checks r and stores it as thread id's result in tx.
func setThreadResultTx(ctx context.Context, tx *sql.Tx, tenant, id string, r db.ThreadResult) error {
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
	now := micros(dbutil.Now())
	res, err := tx.ExecContext(ctx, `UPDATE trellis_threads SET status = ?, error = ?,
		thread_values = CASE WHEN ? THEN ? ELSE thread_values END,
		interrupts = coalesce(?, interrupts), updated_at = ?, `+extendExpiry+` WHERE tenant = ? AND thread_id = ?`,
		r.Status, r.Error, r.Values != nil, values, interrupts, now, now, tenant, id)
	if err != nil {
		return wrap(err, "set the result of thread %q", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("thread", id, tenant)
	}
	return nil
}
