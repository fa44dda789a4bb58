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

// CreateThread stores a new thread (an empty ID gets a new UUID) with its
// Metadata, Status (idle when empty), Values (NULL when empty), Interrupts
// ({} when empty) and Error. A taken ID is ErrConflict with IfExistsRaise
// and returns the stored thread with IfExistsDoNothing.
func (d *DB) CreateThread(ctx context.Context, tenant string, t db.Thread, ifExists db.IfExists) (db.Thread, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Thread{}, err
	}
	if ifExists == "" {
		ifExists = db.IfExistsRaise
	}
	if ifExists != db.IfExistsRaise && ifExists != db.IfExistsDoNothing {
		return db.Thread{}, dbutil.Invalid(`if_exists %q is neither "raise" nor "do_nothing"`, ifExists)
	}
	if t.ID != "" {
		if err := db.CheckID("thread", t.ID); err != nil {
			return db.Thread{}, err
		}
	}
	if err := dbutil.ThreadStatus(t.Status, true); err != nil {
		return db.Thread{}, err
	}
	md, err := dbutil.EncodeMetadata(t.Metadata)
	if err != nil {
		return db.Thread{}, err
	}
	values, err := dbutil.OptionalJSON("values", t.Values)
	if err != nil {
		return db.Thread{}, err
	}
	interrupts, err := dbutil.Object("interrupts", t.Interrupts)
	if err != nil {
		return db.Thread{}, err
	}
	ttl, strategy, err := dbutil.ThreadTTL(t.TTL)
	if err != nil {
		return db.Thread{}, err
	}
	if t.ID == "" {
		t.ID = dbutil.NewID()
	}
	if t.Status == "" {
		t.Status = db.ThreadIdle
	}
	var out db.Thread
	now := dbutil.Now()
	var expires *time.Time
	if t.TTL != nil {
		e := now.Add(t.TTL.Duration)
		expires = &e
	}
	err = d.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO trellis_threads (tenant, `+threadCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11)
			ON CONFLICT DO NOTHING`, tenant, t.ID, t.Status, md, values, interrupts, t.Error, now, ttl, strategy, expires)
		if err != nil {
			return wrap(err, "create thread %q", t.ID)
		}
		if tag.RowsAffected() == 0 && ifExists == db.IfExistsRaise {
			return fmt.Errorf("server/db/postgres: thread %q exists: %w", t.ID, db.ErrConflict)
		}
		out, err = getThread(ctx, tx, tenant, t.ID)
		return err
	})
	return out, err
}

// GetThread returns the thread.
func (d *DB) GetThread(ctx context.Context, tenant, id string) (db.Thread, error) {
	return getThread(ctx, d.pool, tenant, id)
}

// UpdateThreadMetadata merges md into the thread's metadata key by key.
func (d *DB) UpdateThreadMetadata(ctx context.Context, tenant, id string, md db.Metadata) (db.Thread, error) {
	b, err := dbutil.EncodeMetadata(md)
	if err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	err = d.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE trellis_threads SET metadata = metadata || $1::jsonb, updated_at = $2, `+extendExpiry(2)+`
			WHERE tenant = $3 AND thread_id = $4`, b, dbutil.Now(), tenant, id)
		if err != nil {
			return wrap(err, "update thread %q", id)
		}
		if tag.RowsAffected() == 0 {
			return notFound("thread", id, tenant)
		}
		out, err = getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// SetThreadResult sets the thread's status (required) and error (cleared
// when empty); Values and Interrupts replace the stored ones when not nil
// and are kept when nil.
func (d *DB) SetThreadResult(ctx context.Context, tenant, id string, r db.ThreadResult) (db.Thread, error) {
	if err := dbutil.ThreadStatus(r.Status, false); err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	err := d.write(ctx, func(tx pgx.Tx) error {
		if err := setThreadResultTx(ctx, tx, tenant, id, r); err != nil {
			return err
		}
		var err error
		out, err = getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
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

// DeleteThread deletes the thread with its runs, their events and leases
// (a lease holder's next fenced write gets ErrLeaseLost).
func (d *DB) DeleteThread(ctx context.Context, tenant, id string) error {
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_threads WHERE tenant = $1 AND thread_id = $2`, tenant, id)
	if err != nil {
		return wrap(err, "delete thread %q", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("thread", id, tenant)
	}
	return nil
}

// threadWhere builds the filter of q.
func threadWhere(tenant string, q db.ThreadQuery) (string, args, error) {
	if err := dbutil.ThreadStatus(q.Status, true); err != nil {
		return "", nil, err
	}
	mf, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, err
	}
	vf, err := dbutil.ObjectFilter("values", q.Values)
	if err != nil {
		return "", nil, err
	}
	var a args
	where := ` WHERE tenant = ` + a.add(tenant)
	if q.Status != "" {
		where += ` AND status = ` + a.add(q.Status)
	}
	if q.IDs != nil {
		where += ` AND thread_id = ANY(` + a.add(q.IDs) + `::text[])`
	}
	if !mf.Empty() {
		where += ` AND metadata @> ` + a.add(string(mf.JSON())) + `::jsonb`
	}
	if !vf.Empty() {
		where += ` AND thread_values @> ` + a.add(string(vf.JSON())) + `::jsonb`
	}
	if q.Title != "" {
		// A non-string title is no match (->> would give its JSON text).
		where += ` AND jsonb_typeof(metadata->'title') = 'string' AND strpos(lower(metadata->>'title'), lower(` + a.add(q.Title) + `)) > 0`
	}
	return where, a, nil
}

// SearchThreads lists the tenant's threads that match q: ID among q.IDs
// (when not nil), status equal, metadata and values containing q's (@>),
// title containing q.Title; sorted by q.SortBy (thread_id, status, created_at, updated_at; ties by
// ID), then paged.
func (d *DB) SearchThreads(ctx context.Context, tenant string, q db.ThreadQuery) ([]db.Thread, error) {
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	col, dir, err := dbutil.Order(q.Query, dbutil.ThreadSort)
	if err != nil {
		return nil, err
	}
	where, a, err := threadWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	query := `SELECT ` + threadCols + ` FROM trellis_threads` + where +
		` ORDER BY ` + col + ` ` + dir + `, thread_id ` + dir + ` LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(offset)
	rows, err := d.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, wrap(err, "search threads")
	}
	defer rows.Close()
	out := []db.Thread{}
	for rows.Next() {
		t, err := scanThread(rows, tenant)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "search threads")
	}
	return out, nil
}

// CountThreads counts the threads SearchThreads would find without
// paging.
func (d *DB) CountThreads(ctx context.Context, tenant string, q db.ThreadQuery) (int, error) {
	where, a, err := threadWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	var n int
	err = d.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_threads`+where, a...).Scan(&n)
	return n, wrap(err, "count threads")
}

// CopyThread copies the thread row (metadata, status, values, interrupts,
// error; not its runs) under the ID to (a new UUID when empty), created
// now. A taken ID is ErrConflict.
func (d *DB) CopyThread(ctx context.Context, tenant, from, to string) (db.Thread, error) {
	if to == "" {
		to = dbutil.NewID()
	}
	if err := db.CheckID("thread", to); err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	err := d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getThread(ctx, tx, tenant, from); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO trellis_threads (tenant, `+threadCols+`)
			SELECT tenant, $1, status, metadata, thread_values, interrupts, error, $2, $2,
				ttl_us, ttl_strategy, $2::timestamptz + ttl_us * interval '1 microsecond' FROM trellis_threads
			WHERE tenant = $3 AND thread_id = $4 ON CONFLICT DO NOTHING`, to, dbutil.Now(), tenant, from)
		if err != nil {
			return wrap(err, "copy thread %q to %q", from, to)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("server/db/postgres: copy thread %q: thread %q exists: %w", from, to, db.ErrConflict)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at)
			SELECT tenant, $1, checkpoint_id, metadata, updated_at FROM trellis_checkpoint_metadata
			WHERE tenant = $2 AND thread_id = $3`, to, tenant, from); err != nil {
			return wrap(err, "copy the checkpoint metadata of thread %q to %q", from, to)
		}
		out, err = getThread(ctx, tx, tenant, to)
		return err
	})
	return out, err
}

// SetThreadTTL replaces the thread's TTL and counts its expiry from now.
func (d *DB) SetThreadTTL(ctx context.Context, tenant, id string, ttl *db.TTL) (db.Thread, error) {
	us, strategy, err := dbutil.ThreadTTL(ttl)
	if err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	now := dbutil.Now()
	var expires *time.Time
	if ttl != nil {
		e := now.Add(ttl.Duration)
		expires = &e
	}
	err = d.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE trellis_threads SET ttl_us = $1, ttl_strategy = $2, updated_at = $3, expires_at = $4
			WHERE tenant = $5 AND thread_id = $6`, us, strategy, now, expires, tenant, id)
		if err != nil {
			return wrap(err, "set the TTL of thread %q", id)
		}
		if tag.RowsAffected() == 0 {
			return notFound("thread", id, tenant)
		}
		out, err = getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// expiredIdle is the condition of a thread expired at $1 without a
// pending or running run.
const expiredIdle = `t.expires_at IS NOT NULL AND t.expires_at <= $1 AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))`

// ExpiredThreads lists idle threads of every tenant expired at now, the
// longest expired first.
func (d *DB) ExpiredThreads(ctx context.Context, now time.Time, limit int) ([]db.ExpiredThread, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d is not positive", limit)
	}
	rows, err := d.pool.Query(ctx, `SELECT t.tenant, t.thread_id, t.ttl_strategy FROM trellis_threads t
		WHERE `+expiredIdle+` ORDER BY t.expires_at, t.tenant, t.thread_id LIMIT $2`, now, limit)
	if err != nil {
		return nil, wrap(err, "list expired threads")
	}
	defer rows.Close()
	var out []db.ExpiredThread
	for rows.Next() {
		var e db.ExpiredThread
		if err := rows.Scan(&e.Tenant, &e.ThreadID, &e.Strategy); err != nil {
			return nil, wrap(err, "list expired threads")
		}
		out = append(out, e)
	}
	return out, wrap(rows.Err(), "list expired threads")
}

// ExpireThread deletes the thread (delete) or clears its expiry
// (keep_latest) if it is still expired and idle at now.
func (d *DB) ExpireThread(ctx context.Context, tenant, id string, now time.Time) (string, bool, error) {
	var strategy string
	var ok bool
	err := d.write(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT t.ttl_strategy FROM trellis_threads t WHERE `+expiredIdle+` AND t.tenant = $2 AND t.thread_id = $3
			FOR UPDATE`, now, tenant, id).Scan(&strategy)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap(err, "expire thread %q", id)
		}
		ok = true
		if strategy == db.TTLKeepLatest {
			_, err = tx.Exec(ctx, `UPDATE trellis_threads SET expires_at = NULL WHERE tenant = $1 AND thread_id = $2`, tenant, id)
		} else {
			strategy = db.TTLDelete
			_, err = tx.Exec(ctx, `DELETE FROM trellis_threads WHERE tenant = $1 AND thread_id = $2`, tenant, id)
		}
		return wrap(err, "expire thread %q", id)
	})
	if err != nil {
		return "", false, err
	}
	return strategy, ok, nil
}
