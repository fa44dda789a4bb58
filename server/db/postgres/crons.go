package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

const cronCols = `cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload::text, metadata::text, next_run_at, end_time, enabled, on_run_completed, created_at, updated_at`

func scanCron(s scanner, tenant string) (db.Cron, error) {
	var c db.Cron
	var thread *string
	var payload, md []byte
	var next, end *time.Time
	if err := s.Scan(&c.ID, &c.AssistantID, &thread, &c.UserID, &c.Schedule, &c.Timezone, &payload, &md, &next, &end, &c.Enabled, &c.OnRunCompleted, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return db.Cron{}, err
	}
	if thread != nil {
		c.ThreadID = *thread
	}
	c.Payload = payload
	if next != nil {
		c.NextRunAt = utc(*next)
	}
	if end != nil {
		c.EndTime = utc(*end)
	}
	c.CreatedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.UpdatedAt)
	var err error
	if c.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Cron{}, wrap(err, "cron %q of tenant %q", c.ID, tenant)
	}
	return c, nil
}

func getCron(ctx context.Context, q querier, tenant, id string) (db.Cron, error) {
	c, err := scanCron(q.QueryRow(ctx, `SELECT `+cronCols+` FROM trellis_crons WHERE tenant = $1 AND cron_id = $2`, tenant, id), tenant)
	if errors.Is(err, pgx.ErrNoRows) {
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
	var out db.Cron
	err = d.write(ctx, func(tx pgx.Tx) error {
		if c.ThreadID != "" {
			if _, err := getThread(ctx, tx, tenant, c.ThreadID); err != nil {
				return err
			}
		}
		out, err = scanCron(tx.QueryRow(ctx, `INSERT INTO trellis_crons (tenant, cron_id, assistant_id, thread_id, user_id, schedule, timezone, payload, metadata,
			next_run_at, end_time, enabled, on_run_completed, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12, $13, $14, $14) RETURNING `+cronCols,
			tenant, c.ID, c.AssistantID, nullString(c.ThreadID), c.UserID, c.Schedule, c.Timezone, string(payload), string(md),
			nullTime(c.NextRunAt), nullTime(c.EndTime), c.Enabled, c.OnRunCompleted, now), tenant)
		if isUnique(err, "") {
			return wrap(db.ErrConflict, "cron %q", c.ID)
		}
		return wrap(err, "create cron %q", c.ID)
	})
	return out, err
}

// GetCron returns a cron.
func (d *DB) GetCron(ctx context.Context, tenant, id string) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	return getCron(ctx, d.pool, tenant, id)
}

// UpdateCron applies p to a cron.
func (d *DB) UpdateCron(ctx context.Context, tenant, id string, p db.CronPatch) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	var out db.Cron
	err := d.write(ctx, func(tx pgx.Tx) error {
		c, err := scanCron(tx.QueryRow(ctx, `SELECT `+cronCols+` FROM trellis_crons WHERE tenant = $1 AND cron_id = $2 FOR UPDATE`, tenant, id), tenant)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("cron", id, tenant)
		}
		if err != nil {
			return wrap(err, "get cron %q", id)
		}
		applyCronPatch(&c, p)
		payload, md, err := dbutil.Cron(&c)
		if err != nil {
			return err
		}
		out, err = scanCron(tx.QueryRow(ctx, `UPDATE trellis_crons SET schedule = $1, timezone = $2, payload = $3::jsonb, metadata = $4::jsonb,
			next_run_at = $5, end_time = $6, enabled = $7, on_run_completed = $8, updated_at = $9
			WHERE tenant = $10 AND cron_id = $11 RETURNING `+cronCols,
			c.Schedule, c.Timezone, string(payload), string(md), nullTime(c.NextRunAt), nullTime(c.EndTime), c.Enabled, c.OnRunCompleted,
			dbutil.Now(), tenant, id), tenant)
		return wrap(err, "update cron %q", id)
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
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_crons WHERE tenant = $1 AND cron_id = $2`, tenant, id)
	if err != nil {
		return wrap(err, "delete cron %q", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("cron", id, tenant)
	}
	return nil
}

func cronWhere(tenant string, q db.CronQuery) (string, args, error) {
	var a args
	where := ` WHERE tenant = ` + a.add(tenant)
	if q.AssistantID != "" {
		where += ` AND assistant_id = ` + a.add(q.AssistantID)
	}
	if q.ThreadID != "" {
		where += ` AND thread_id = ` + a.add(q.ThreadID)
	}
	if q.Enabled != nil {
		where += ` AND enabled = ` + a.add(*q.Enabled)
	}
	f, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return "", nil, err
	}
	if !f.Empty() {
		where += ` AND metadata @> ` + a.add(string(f.JSON())) + `::jsonb`
	}
	return where, a, nil
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
	where, a, err := cronWhere(tenant, q)
	if err != nil {
		return nil, err
	}
	query := `SELECT ` + cronCols + ` FROM trellis_crons` + where +
		` ORDER BY ` + col + ` ` + dir + `, cron_id ` + dir + ` LIMIT ` + a.add(limit) + ` OFFSET ` + a.add(offset)
	return d.listCrons(ctx, query, a, tenant, "search crons")
}

func (d *DB) listCrons(ctx context.Context, query string, a []any, tenant, what string) ([]db.Cron, error) {
	rows, err := d.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, wrap(err, "%s", what)
	}
	defer rows.Close()
	out := []db.Cron{}
	for rows.Next() {
		c, err := scanCron(rows, tenant)
		if err != nil {
			return nil, wrap(err, "%s", what)
		}
		out = append(out, c)
	}
	return out, wrap(rows.Err(), "%s", what)
}

// CountCrons counts what SearchCrons would find without paging.
func (d *DB) CountCrons(ctx context.Context, tenant string, q db.CronQuery) (int, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return 0, err
	}
	where, a, err := cronWhere(tenant, q)
	if err != nil {
		return 0, err
	}
	var n int
	err = d.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_crons`+where, a...).Scan(&n)
	return n, wrap(err, "count crons")
}

// DueCrons lists enabled crons of every tenant whose next slot has come.
func (d *DB) DueCrons(ctx context.Context, now time.Time, limit int) ([]db.DueCron, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d must be positive", limit)
	}
	rows, err := d.pool.Query(ctx, `SELECT tenant, `+cronCols+` FROM trellis_crons
		WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1 ORDER BY next_run_at, tenant, cron_id LIMIT $2`, now, limit)
	if err != nil {
		return nil, wrap(err, "list due crons")
	}
	defer rows.Close()
	out := []db.DueCron{}
	for rows.Next() {
		var tenant string
		c, err := scanCron(tenantScanner{rows, &tenant}, "")
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
	tag, err := d.pool.Exec(ctx, `UPDATE trellis_crons SET next_run_at = $1, updated_at = $2
		WHERE tenant = $3 AND cron_id = $4 AND enabled AND next_run_at = $5`,
		nullTime(next), dbutil.Now(), tenant, id, slot)
	if err != nil {
		return false, wrap(err, "advance cron %q", id)
	}
	return tag.RowsAffected() == 1, nil
}
