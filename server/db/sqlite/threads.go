package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

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

// threadRow is a validated thread ready to insert.
type threadRow struct {
	md, values, interrupts []byte
	ttl                    any
	strategy               string
}

func validateThread(t db.Thread) (threadRow, error) {
	var r threadRow
	var err error
	if err = dbutil.ThreadStatus(t.Status, true); err != nil {
		return r, err
	}
	if r.md, err = dbutil.EncodeMetadata(t.Metadata); err != nil {
		return r, err
	}
	if r.values, err = dbutil.OptionalJSON("values", t.Values); err != nil {
		return r, err
	}
	if r.interrupts, err = dbutil.Object("interrupts", t.Interrupts); err != nil {
		return r, err
	}
	if r.ttl, r.strategy, err = dbutil.ThreadTTL(t.TTL); err != nil {
		return r, err
	}
	return r, nil
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
	r, err := validateThread(t)
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
	err = d.write(ctx, func(tx *sql.Tx) error {
		existing, err := getThread(ctx, tx, tenant, t.ID)
		if err == nil {
			if ifExists == db.IfExistsDoNothing {
				out = existing
				return nil
			}
			return fmt.Errorf("server/db/sqlite: thread %q exists: %w", t.ID, db.ErrConflict)
		}
		if !errors.Is(err, db.ErrNotFound) {
			return err
		}
		now := micros(dbutil.Now())
		var expires any
		if t.TTL != nil {
			expires = now + t.TTL.Duration.Microseconds()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_threads (tenant, `+threadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, t.ID, t.Status, r.md, r.values, r.interrupts, t.Error, now, now, r.ttl, r.strategy, expires); err != nil {
			return wrap(err, "create thread %q", t.ID)
		}
		out, err = getThread(ctx, tx, tenant, t.ID)
		return err
	})
	return out, err
}

// GetThread returns the thread.
func (d *DB) GetThread(ctx context.Context, tenant, id string) (db.Thread, error) {
	return getThread(ctx, d.sq.Read, tenant, id)
}

// UpdateThreadMetadata merges md into the thread's metadata key by key.
func (d *DB) UpdateThreadMetadata(ctx context.Context, tenant, id string, md db.Metadata) (db.Thread, error) {
	var out db.Thread
	err := d.write(ctx, func(tx *sql.Tx) error {
		t, err := getThread(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		b, err := dbutil.EncodeMetadata(dbutil.Merge(t.Metadata, md))
		if err != nil {
			return err
		}
		now := micros(dbutil.Now())
		if _, err := tx.ExecContext(ctx, `UPDATE trellis_threads SET metadata = ?, updated_at = ?, `+extendExpiry+` WHERE tenant = ? AND thread_id = ?`,
			b, now, now, tenant, id); err != nil {
			return wrap(err, "update thread %q", id)
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
	err := d.write(ctx, func(tx *sql.Tx) error {
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

// DeleteThread deletes the thread with its runs, their events and leases
// (a lease holder's next fenced write gets ErrLeaseLost).
func (d *DB) DeleteThread(ctx context.Context, tenant, id string) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trellis_threads WHERE tenant = ? AND thread_id = ?`, tenant, id)
		if err != nil {
			return wrap(err, "delete thread %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("thread", id, tenant)
		}
		return nil
	})
}

// threadWhere builds the SQL filter and the Go filter of q.
func threadWhere(tenant string, q db.ThreadQuery) (where string, args []any, match func(db.Thread, []byte) bool, err error) {
	if err := dbutil.ThreadStatus(q.Status, true); err != nil {
		return "", nil, nil, err
	}
	where, args = ` WHERE tenant = ?`, []any{tenant}
	if q.Status != "" {
		where += ` AND status = ?`
		args = append(args, q.Status)
	}
	if q.IDs != nil {
		if len(q.IDs) == 0 {
			where += ` AND 0`
		} else {
			where += ` AND thread_id IN (?` + strings.Repeat(`, ?`, len(q.IDs)-1) + `)`
			for _, id := range q.IDs {
				args = append(args, id)
			}
		}
	}
	mf, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, nil, err
	}
	vf, err := dbutil.ObjectFilter("values", q.Values)
	if err != nil {
		return "", nil, nil, err
	}
	title := strings.ToLower(q.Title)
	if mf.Empty() && vf.Empty() && title == "" {
		return where, args, nil, nil
	}
	return where, args, func(t db.Thread, md []byte) bool {
		return mf.Match(md) && vf.Match(t.Values) && (title == "" || titleHas(md, title))
	}, nil
}

// titleHas reports whether the metadata JSON md has a string "title"
// containing the lower-cased text lower, case-insensitive. SQLite's lower()
// folds only ASCII, so the match runs in Go, like the metadata filter.
func titleHas(md []byte, lower string) bool {
	var m struct {
		Title any `json:"title"`
	}
	if json.Unmarshal(md, &m) != nil {
		return false
	}
	s, ok := m.Title.(string)
	return ok && strings.Contains(strings.ToLower(s), lower)
}

// SearchThreads lists the tenant's threads that match q: ID among q.IDs
// (when not nil), status equal, metadata and values containing q's,
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
	where, args, match, err := threadWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	return search(ctx, d, threadListing, tenant, where, args, match, col, dir, limit, offset)
}

// CountThreads counts the threads SearchThreads would find without
// paging.
func (d *DB) CountThreads(ctx context.Context, tenant string, q db.ThreadQuery) (int, error) {
	where, args, match, err := threadWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	return count(ctx, d, threadListing, tenant, where, args, match)
}

var threadListing = listing[db.Thread]{what: "threads", table: "trellis_threads", cols: threadCols, idCol: "thread_id", scan: scanThreadMD}

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
	err := d.write(ctx, func(tx *sql.Tx) error {
		if _, err := getThread(ctx, tx, tenant, from); err != nil {
			return err
		}
		if _, err := getThread(ctx, tx, tenant, to); err == nil {
			return fmt.Errorf("server/db/sqlite: copy thread %q: thread %q exists: %w", from, to, db.ErrConflict)
		} else if !errors.Is(err, db.ErrNotFound) {
			return err
		}
		now := micros(dbutil.Now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_threads (tenant, `+threadCols+`)
			SELECT tenant, ?, status, metadata, thread_values, interrupts, error, ?, ?, ttl_us, ttl_strategy, ? + ttl_us FROM trellis_threads
			WHERE tenant = ? AND thread_id = ?`, to, now, now, now, tenant, from); err != nil {
			return wrap(err, "copy thread %q to %q", from, to)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO trellis_checkpoint_metadata (tenant, thread_id, checkpoint_id, metadata, updated_at)
			SELECT tenant, ?, checkpoint_id, metadata, updated_at FROM trellis_checkpoint_metadata
			WHERE tenant = ? AND thread_id = ?`, to, tenant, from); err != nil {
			return wrap(err, "copy the checkpoint metadata of thread %q to %q", from, to)
		}
		var err error
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
	err = d.write(ctx, func(tx *sql.Tx) error {
		now := micros(dbutil.Now())
		var expires any
		if ttl != nil {
			expires = now + ttl.Duration.Microseconds()
		}
		res, err := tx.ExecContext(ctx, `UPDATE trellis_threads SET ttl_us = ?, ttl_strategy = ?, updated_at = ?, expires_at = ?
			WHERE tenant = ? AND thread_id = ?`, us, strategy, now, expires, tenant, id)
		if err != nil {
			return wrap(err, "set the TTL of thread %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("thread", id, tenant)
		}
		out, err = getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// expiredIdle is the condition of a thread expired at ? (microseconds)
// without a pending or running run.
const expiredIdle = `t.expires_at IS NOT NULL AND t.expires_at <= ? AND NOT EXISTS (
	SELECT 1 FROM trellis_runs r WHERE r.tenant = t.tenant AND r.thread_id = t.thread_id AND r.status IN ('pending', 'running'))`

// ExpiredThreads lists idle threads of every tenant expired at now, the
// longest expired first.
func (d *DB) ExpiredThreads(ctx context.Context, now time.Time, limit int) ([]db.ExpiredThread, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d is not positive", limit)
	}
	rows, err := d.sq.Read.QueryContext(ctx, `SELECT t.tenant, t.thread_id, t.ttl_strategy FROM trellis_threads t
		WHERE `+expiredIdle+` ORDER BY t.expires_at, t.tenant, t.thread_id LIMIT ?`, micros(now), limit)
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
	err := d.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT t.ttl_strategy FROM trellis_threads t WHERE t.tenant = ? AND t.thread_id = ? AND `+expiredIdle,
			tenant, id, micros(now)).Scan(&strategy)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap(err, "expire thread %q", id)
		}
		ok = true
		if strategy == db.TTLKeepLatest {
			_, err = tx.ExecContext(ctx, `UPDATE trellis_threads SET expires_at = NULL WHERE tenant = ? AND thread_id = ?`, tenant, id)
		} else {
			strategy = db.TTLDelete
			_, err = tx.ExecContext(ctx, `DELETE FROM trellis_threads WHERE tenant = ? AND thread_id = ?`, tenant, id)
		}
		return wrap(err, "expire thread %q", id)
	})
	if err != nil {
		return "", false, err
	}
	return strategy, ok, nil
}
