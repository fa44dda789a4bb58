package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const cronCols = `cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata, next_run_at, end_time, enabled, on_run_completed, created_at, updated_at`

func scanCronMD(s scanner, tenant string) (db.Cron, []byte, error) {
	var c db.Cron
	var thread sql.NullString
	var payload, md []byte
	var next, end sql.NullInt64
	var created, updated int64
	if err := s.Scan(&c.ID, &c.AssistantID, &thread, &c.UserID, &c.Schedule, &c.Timezone, &payload, &md, &next, &end, &c.Enabled, &c.OnRunCompleted, &created, &updated); err != nil {
		return db.Cron{}, nil, err
	}
	c.ThreadID = thread.String
	c.Payload = payload
	if next.Valid {
		c.NextRunAt = fromMicros(next.Int64)
	}
	if end.Valid {
		c.EndTime = fromMicros(end.Int64)
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	var err error
	if c.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Cron{}, nil, wrap(err, "cron %q of tenant %q", c.ID, tenant)
	}
	return c, md, nil
}

func getCron(ctx context.Context, q querier, tenant, id string) (db.Cron, error) {
	c, _, err := scanCronMD(q.QueryRowContext(ctx, `SELECT `+cronCols+` FROM trellis_crons WHERE tenant = ? AND cron_id = ?`, tenant, id), tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return db.Cron{}, notFound("cron", id, tenant)
	}
	if err != nil {
		return db.Cron{}, wrap(err, "get cron %q", id)
	}
	return c, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateCron stores a cron.
func (d *DB) CreateCron(ctx context.Context, tenant string, c db.Cron) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	payload, md, err := dbutil.Cron(&c)
	if err != nil {
		return db.Cron{}, err
	}
	if c.ID == "" {
		c.ID = dbutil.NewID()
	}
	now := dbutil.Now()
	err = d.write(ctx, func(tx *sql.Tx) error {
		if c.ThreadID != "" {
			if _, err := getThread(ctx, tx, tenant, c.ThreadID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO trellis_crons (tenant, `+cronCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, c.ID, c.AssistantID, nullString(c.ThreadID), c.UserID, c.Schedule, c.Timezone, payload, md,
			nullMicros(c.NextRunAt), nullMicros(c.EndTime), c.Enabled, c.OnRunCompleted, micros(now), micros(now))
		if isUnique(err) {
			return wrap(db.ErrConflict, "cron %q", c.ID)
		}
		return wrap(err, "create cron %q", c.ID)
	})
	if err != nil {
		return db.Cron{}, err
	}
	return d.GetCron(ctx, tenant, c.ID)
}

// GetCron returns a cron.
func (d *DB) GetCron(ctx context.Context, tenant, id string) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	return getCron(ctx, d.sq.Read, tenant, id)
}

// UpdateCron applies p to a cron.
func (d *DB) UpdateCron(ctx context.Context, tenant, id string, p db.CronPatch) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	var out db.Cron
	err := d.write(ctx, func(tx *sql.Tx) error {
		c, err := getCron(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		applyCronPatch(&c, p)
		payload, md, err := dbutil.Cron(&c)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE trellis_crons SET schedule = ?, timezone = ?, payload = ?, metadata = ?, next_run_at = ?, end_time = ?,
			enabled = ?, on_run_completed = ?, updated_at = ? WHERE tenant = ? AND cron_id = ?`,
			c.Schedule, c.Timezone, payload, md, nullMicros(c.NextRunAt), nullMicros(c.EndTime), c.Enabled, c.OnRunCompleted,
			micros(dbutil.Now()), tenant, id)
		if err != nil {
			return wrap(err, "update cron %q", id)
		}
		out, err = getCron(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// applyCronPatch applies p to c in memory.
func applyCronPatch(c *db.Cron, p db.CronPatch) {
	if p.Schedule != nil {
		c.Schedule = *p.Schedule
	}
	if p.Timezone != nil {
		c.Timezone = *p.Timezone
	}
	if len(p.Payload) > 0 {
		c.Payload = p.Payload
	}
	if p.Metadata != nil {
		c.Metadata = dbutil.Merge(c.Metadata, p.Metadata)
	}
	if p.Enabled != nil {
		c.Enabled = *p.Enabled
	}
	if p.OnRunCompleted != nil {
		c.OnRunCompleted = *p.OnRunCompleted
	}
	if p.EndTime != nil {
		c.EndTime = *p.EndTime
	}
	if p.ClearEndTime {
		c.EndTime = time.Time{}
	}
	if p.NextRunAt != nil {
		c.NextRunAt = *p.NextRunAt
	}
}

// DeleteCron deletes a cron.
func (d *DB) DeleteCron(ctx context.Context, tenant, id string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM trellis_crons WHERE tenant = ? AND cron_id = ?`, tenant, id)
		if err != nil {
			return wrap(err, "delete cron %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("cron", id, tenant)
		}
		return nil
	})
}

var cronListing = listing[db.Cron]{what: "crons", table: "trellis_crons", cols: cronCols, idCol: "cron_id", scan: scanCronMD}

func cronWhere(tenant string, q db.CronQuery) (string, []any, func(db.Cron, []byte) bool, error) {
	where, args := ` WHERE tenant = ?`, []any{tenant}
	if q.AssistantID != "" {
		where += ` AND assistant_id = ?`
		args = append(args, q.AssistantID)
	}
	if q.ThreadID != "" {
		where += ` AND thread_id = ?`
		args = append(args, q.ThreadID)
	}
	if q.Enabled != nil {
		where += ` AND enabled = ?`
		args = append(args, *q.Enabled)
	}
	f, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, nil, err
	}
	if f.Empty() {
		return where, args, nil, nil
	}
	return where, args, func(_ db.Cron, md []byte) bool { return f.Match(md) }, nil
}

// SearchCrons lists the tenant's crons matching q.
func (d *DB) SearchCrons(ctx context.Context, tenant string, q db.CronQuery) ([]db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	limit, offset, err := dbutil.Page(q.Limit, q.Offset)
	if err != nil {
		return nil, err
	}
	col, dir, err := dbutil.Order(q.Query, dbutil.CronSort)
	if err != nil {
		return nil, err
	}
	where, args, match, err := cronWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	return search(ctx, d, cronListing, tenant, where, args, match, col, dir, limit, offset)
}

// CountCrons counts what SearchCrons would find without paging.
func (d *DB) CountCrons(ctx context.Context, tenant string, q db.CronQuery) (int, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return 0, err
	}
	where, args, match, err := cronWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	return count(ctx, d, cronListing, tenant, where, args, match)
}

// DueCrons lists enabled crons of every tenant whose next slot has come.
func (d *DB) DueCrons(ctx context.Context, now time.Time, limit int) ([]db.DueCron, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d must be positive", limit)
	}
	rows, err := d.sq.Read.QueryContext(ctx, `SELECT tenant, `+cronCols+` FROM trellis_crons
		WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at, tenant, cron_id LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, wrap(err, "list due crons")
	}
	defer rows.Close()
	out := []db.DueCron{}
	for rows.Next() {
		var tenant string
		c, _, err := scanCronMD(tenantScanner{rows, &tenant}, "")
		if err != nil {
			return nil, wrap(err, "list due crons")
		}
		out = append(out, db.DueCron{Tenant: tenant, Cron: c})
	}
	return out, wrap(rows.Err(), "list due crons")
}

// tenantScanner scans a leading tenant column before the row's own.
type tenantScanner struct {
	s      scanner
	tenant *string
}

func (t tenantScanner) Scan(dest ...any) error {
	return t.s.Scan(append([]any{t.tenant}, dest...)...)
}

// AdvanceCron moves the cron's next slot from slot to next when it is
// still slot (compare-and-set).
func (d *DB) AdvanceCron(ctx context.Context, tenant, id string, slot, next time.Time) (bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return false, err
	}
	var ok bool
	err := d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE trellis_crons SET next_run_at = ?, updated_at = ?
			WHERE tenant = ? AND cron_id = ? AND enabled = 1 AND next_run_at = ?`,
			nullMicros(next), micros(dbutil.Now()), tenant, id, micros(slot))
		if err != nil {
			return wrap(err, "advance cron %q", id)
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return wrap(err, "advance cron %q", id)
	})
	return ok, err
}
