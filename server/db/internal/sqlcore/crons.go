package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanCron reads ID, assistant ID, thread ID (NULL: none), user ID,
// schedule, timezone, payload, metadata, next run and end times (NULL:
// none), enabled, on-run-completed, creation and update times, and
// returns the stored metadata JSON too.
func (s *Store) scanCron(r Row, tenant string) (db.Cron, []byte, error) {
	var c db.Cron
	var thread *string
	var payload, md []byte
	if err := r.Scan(&c.ID, &c.AssistantID, &thread, &c.UserID, &c.Schedule, &c.Timezone, &payload, &md,
		s.d.ScanTime(&c.NextRunAt), s.d.ScanTime(&c.EndTime), &c.Enabled, &c.OnRunCompleted,
		s.d.ScanTime(&c.CreatedAt), s.d.ScanTime(&c.UpdatedAt)); err != nil {
		return db.Cron{}, nil, err
	}
	if thread != nil {
		c.ThreadID = *thread
	}
	c.Payload = payload
	var err error
	if c.Metadata, err = dbutil.DecodeMetadata(md); err != nil {
		return db.Cron{}, nil, s.wrap(err, "cron %q of tenant %q", c.ID, tenant)
	}
	return c, md, nil
}

func (s *Store) cronScan(tenant string) scanFunc[db.Cron] {
	return func(r Row) (db.Cron, []byte, error) { return s.scanCron(r, tenant) }
}

// getCron reads a cron, locking it when lock is set.
func (s *Store) getCron(ctx context.Context, c Conn, tenant, id string, lock bool) (db.Cron, error) {
	return getOne(ctx, s, c, "cron", tenant, id, rowOnly(s.cronScan(tenant)), locked(lock, s.q.GetCron, s.q.GetCronForUpdate))
}

// nullTime stores a zero time as NULL.
func (s *Store) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.Time(t)
}

// nullString stores "" as NULL.
func nullString(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// CreateCron stores a cron.
func (s *Store) CreateCron(ctx context.Context, tenant string, c db.Cron) (db.Cron, error) {
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
	var out db.Cron
	err = s.d.Write(ctx, func(tx Conn) error {
		if c.ThreadID != "" {
			var one int
			err := tx.QueryRow(ctx, s.q.ThreadExists, tenant, c.ThreadID).Scan(&one)
			if s.d.IsNoRows(err) {
				return s.notFound("thread", c.ThreadID, tenant)
			}
			if err != nil {
				return s.wrap(err, "get thread %q", c.ThreadID)
			}
		}
		out, _, err = s.scanCron(tx.QueryRow(ctx, s.q.InsertCron,
			tenant, c.ID, c.AssistantID, nullString(c.ThreadID), c.UserID, c.Schedule, c.Timezone, payload, md,
			s.nullTime(c.NextRunAt), s.nullTime(c.EndTime), c.Enabled, c.OnRunCompleted, s.d.Time(dbutil.Now())), tenant)
		if s.d.IsUnique(err) {
			return s.wrap(db.ErrConflict, "cron %q", c.ID)
		}
		return s.wrap(err, "create cron %q", c.ID)
	})
	return out, err
}

// GetCron returns a cron.
func (s *Store) GetCron(ctx context.Context, tenant, id string) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	return s.getCron(ctx, s.d.Reader(), tenant, id, false)
}

// UpdateCron applies p to a cron.
func (s *Store) UpdateCron(ctx context.Context, tenant, id string, p db.CronPatch) (db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return db.Cron{}, err
	}
	var out db.Cron
	err := s.d.Write(ctx, func(tx Conn) error {
		c, err := s.getCron(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		applyCronPatch(&c, p)
		payload, md, err := dbutil.Cron(&c)
		if err != nil {
			return err
		}
		out, _, err = s.scanCron(tx.QueryRow(ctx, s.q.UpdateCron,
			c.Schedule, c.Timezone, payload, md, s.nullTime(c.NextRunAt), s.nullTime(c.EndTime), c.Enabled, c.OnRunCompleted,
			s.d.Time(dbutil.Now()), tenant, id), tenant)
		return s.wrap(err, "update cron %q", id)
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
func (s *Store) DeleteCron(ctx context.Context, tenant, id string) error {
	if err := dbutil.Tenant(tenant); err != nil {
		return err
	}
	n, err := s.d.Exec(ctx, s.q.DeleteCron, tenant, id)
	if err != nil {
		return s.wrap(err, "delete cron %q", id)
	}
	if n == 0 {
		return s.notFound("cron", id, tenant)
	}
	return nil
}

func (s *Store) cronFilter(tenant string, q db.CronQuery) (*filter[db.Cron], error) {
	md, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	f := newFilter[db.Cron](s.d)
	f.where("tenant = %s", tenant)
	if q.AssistantID != "" {
		f.where("assistant_id = %s", q.AssistantID)
	}
	if q.ThreadID != "" {
		f.where("thread_id = %s", q.ThreadID)
	}
	if q.Enabled != nil {
		f.where("enabled = %s", *q.Enabled)
	}
	f.contains("metadata", md, func(_ db.Cron, md []byte) []byte { return md })
	return f, nil
}

// SearchCrons lists the tenant's crons matching q.
func (s *Store) SearchCrons(ctx context.Context, tenant string, q db.CronQuery) ([]db.Cron, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return nil, err
	}
	return s.crons(tenant).page(ctx, s, q.Query, func() (*filter[db.Cron], error) { return s.cronFilter(tenant, q) })
}

// CountCrons counts what SearchCrons would find without paging.
func (s *Store) CountCrons(ctx context.Context, tenant string, q db.CronQuery) (int, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return 0, err
	}
	return s.crons(tenant).total(ctx, s, func() (*filter[db.Cron], error) { return s.cronFilter(tenant, q) })
}

func (s *Store) crons(tenant string) listing[db.Cron] {
	return listing[db.Cron]{what: "crons", sel: s.q.SelectCrons, count: s.q.CountCrons,
		sorts: dbutil.CronSort, idCol: "cron_id", scan: s.cronScan(tenant)}
}

// DueCrons lists enabled crons of every tenant whose next slot has come.
func (s *Store) DueCrons(ctx context.Context, now time.Time, limit int) ([]db.DueCron, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d must be positive", limit)
	}
	scan := func(r Row) (db.DueCron, error) {
		var due db.DueCron
		c, _, err := s.scanCron(tenantRow{r, &due.Tenant}, "")
		due.Cron = c
		return due, err
	}
	out, err := collect(ctx, s.d.Reader(), scan, s.q.DueCrons, s.d.Time(now), limit)
	if err != nil {
		return nil, s.wrap(err, "list due crons")
	}
	return out, nil
}

// tenantRow scans a leading tenant column before the row's own.
type tenantRow struct {
	r      Row
	tenant *string
}

func (t tenantRow) Scan(dest ...any) error {
	return t.r.Scan(append([]any{t.tenant}, dest...)...)
}

// AdvanceCron moves the cron's next slot from slot to next when it is
// still slot (compare-and-set).
func (s *Store) AdvanceCron(ctx context.Context, tenant, id string, slot, next time.Time) (bool, error) {
	if err := dbutil.Tenant(tenant); err != nil {
		return false, err
	}
	n, err := s.d.Exec(ctx, s.q.AdvanceCron, s.nullTime(next), s.d.Time(dbutil.Now()), tenant, id, s.d.Time(slot))
	if err != nil {
		return false, s.wrap(err, "advance cron %q", id)
	}
	return n == 1, nil
}
