package sqlcore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanThread reads ID, status, metadata, values, interrupts, error,
// creation and update times, TTL in microseconds (NULL: none), TTL
// strategy and expiry (NULL: never), and returns the stored metadata JSON
// too; an undecodable row is an error naming it.
func (s *Store) scanThread(r Row, tenant string) (db.Thread, []byte, error) {
	var c threadCols
	if err := r.Scan(s.threadDest(&c)...); err != nil {
		return db.Thread{}, nil, err
	}
	return s.threadOf(&c, tenant)
}

// threadCols holds a thread's columns as scanned (threadDest), before
// threadOf decodes them.
type threadCols struct {
	t                      db.Thread
	status, strategy       string
	md, values, interrupts []byte
	ttl                    *int64
}

// threadDest are the scan destinations of a thread's columns, in the order
// the statements return them, for a scan that reads more than a thread.
func (s *Store) threadDest(c *threadCols) []any {
	return []any{&c.t.ID, &c.status, &c.md, &c.values, &c.interrupts, &c.t.Error, s.d.ScanTime(&c.t.CreatedAt), s.d.ScanTime(&c.t.UpdatedAt),
		&c.ttl, &c.strategy, s.d.ScanTime(&c.t.ExpiresAt)}
}

// threadOf decodes the thread c holds, with its metadata as stored.
func (s *Store) threadOf(c *threadCols, tenant string) (db.Thread, []byte, error) {
	t := c.t
	t.Status = db.ThreadStatus(c.status)
	var err error
	if t.Metadata, err = dbutil.DecodeMetadata(c.md); err != nil {
		return db.Thread{}, nil, s.fail(err, "thread %q (tenant %q)", t.ID, tenant)
	}
	t.Values, t.Interrupts = c.values, c.interrupts
	t.TTL = dbutil.ScanTTL(c.ttl, c.strategy)
	return t, c.md, nil
}

func (s *Store) threadScan(tenant string) scanFunc[db.Thread] {
	return func(r Row) (db.Thread, []byte, error) { return s.scanThread(r, tenant) }
}

func (s *Store) getThread(ctx context.Context, c Conn, tenant, id string) (db.Thread, error) {
	return getOne(ctx, s, c, "thread", tenant, id, rowOnly(s.threadScan(tenant)), s.q.GetThread)
}

// CreateThread stores a new thread (an empty ID gets a new UUID) with its
// Metadata, Status (idle when empty), Values (NULL when empty), Interrupts
// ({} when empty) and Error. A taken ID is ErrConflict with IfExistsRaise
// and returns the stored thread with IfExistsDoNothing.
func (s *Store) CreateThread(ctx context.Context, tenant string, t db.Thread, ifExists db.IfExists) (db.Thread, error) {
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
	now := dbutil.Now()
	var expires time.Time
	if t.TTL != nil {
		expires = now.Add(t.TTL.Duration)
	}
	// One statement, committed alone: the stored thread comes back with
	// its INSERT. Only a thread that existed is read, after it.
	var out db.Thread
	err = s.d.WriteOne(ctx, func(c Conn) error {
		var err error
		out, _, err = s.scanThread(c.QueryRow(ctx, s.q.CreateThread, tenant, t.ID, string(t.Status), md, nullBytes(values), interrupts, t.Error,
			s.d.Time(now), ttl, strategy, s.nullTime(expires)), tenant)
		return err
	})
	switch {
	case err == nil:
		return out, nil
	case !s.d.IsNoRows(err):
		return db.Thread{}, s.wrap(err, "create thread %q", t.ID)
	case ifExists == db.IfExistsRaise:
		return db.Thread{}, s.fail(db.ErrConflict, "thread %q exists", t.ID)
	}
	return s.getThread(ctx, s.d.Reader(), tenant, t.ID)
}

// GetThread returns the thread.
func (s *Store) GetThread(ctx context.Context, tenant, id string) (db.Thread, error) {
	return s.getThread(ctx, s.d.Reader(), tenant, id)
}

// UpdateThreadMetadata merges md into the thread's metadata key by key.
func (s *Store) UpdateThreadMetadata(ctx context.Context, tenant, id string, md db.Metadata) (db.Thread, error) {
	var out db.Thread
	err := s.d.Write(ctx, func(tx Conn) error {
		b, err := s.metadataPatch(md, func() (db.Metadata, error) {
			t, err := s.getThread(ctx, tx, tenant, id)
			return t.Metadata, err
		})
		if err != nil {
			return err
		}
		n, err := tx.Exec(ctx, s.q.UpdateThreadMetadata, b, s.d.Time(dbutil.Now()), tenant, id)
		if err != nil {
			return s.wrap(err, "update thread %q", id)
		}
		if n == 0 {
			return s.notFound("thread", id, tenant)
		}
		out, err = s.getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// metadataPatch is the argument that merges md into stored metadata: md
// itself when the dialect merges in SQL, else the stored metadata (read
// by old, in the write transaction) with md merged.
func (s *Store) metadataPatch(md db.Metadata, old func() (db.Metadata, error)) ([]byte, error) {
	if s.d.MergesInSQL() {
		return dbutil.EncodeMetadata(md)
	}
	stored, err := old()
	if err != nil {
		return nil, err
	}
	return dbutil.EncodeMetadata(dbutil.Merge(stored, md))
}

// SetThreadResult sets the thread's status (required) and error (cleared
// when empty); Values and Interrupts replace the stored ones when not nil
// and are kept when nil.
func (s *Store) SetThreadResult(ctx context.Context, tenant, id string, r db.ThreadResult) (db.Thread, error) {
	tr, err := newThreadResult(r)
	if err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	err = s.d.Write(ctx, func(tx Conn) error {
		var err error
		out, err = s.setThreadResult(ctx, tx, tenant, id, tr)
		return err
	})
	return out, err
}

// threadResult is a thread's result checked and encoded.
type threadResult struct {
	db.ThreadResult
	values, interrupts []byte
}

// newThreadResult checks r and encodes its values and interrupts.
func newThreadResult(r db.ThreadResult) (threadResult, error) {
	if err := dbutil.ThreadStatus(r.Status, false); err != nil {
		return threadResult{}, err
	}
	values, err := dbutil.OptionalJSON("values", r.Values)
	if err != nil {
		return threadResult{}, err
	}
	var interrupts []byte
	if r.Interrupts != nil {
		if interrupts, err = dbutil.Object("interrupts", r.Interrupts); err != nil {
			return threadResult{}, err
		}
	}
	return threadResult{r, values, interrupts}, nil
}

// setThreadResult stores r as thread id's result in c and returns the
// thread as stored (the statement returns it: no second read).
func (s *Store) setThreadResult(ctx context.Context, c Conn, tenant, id string, r threadResult) (db.Thread, error) {
	return s.setThreadResultBy(ctx, c, s.q.SetThreadResult, tenant, id, r)
}

// setThreadResultBy is setThreadResult by query, SetThreadResult or a
// query of its arguments and columns that returns more after them, which
// extra receives.
func (s *Store) setThreadResultBy(ctx context.Context, c Conn, query, tenant, id string, r threadResult, extra ...any) (db.Thread, error) {
	th, _, err := s.scanThread(extraRow{c.QueryRow(ctx, query, string(r.Status), r.Error, r.Values != nil, nullBytes(r.values),
		nullBytes(r.interrupts), s.d.Time(dbutil.Now()), tenant, id, r.Title), extra}, tenant)
	if s.d.IsNoRows(err) {
		return db.Thread{}, s.notFound("thread", id, tenant)
	}
	if err != nil {
		return db.Thread{}, s.wrap(err, "set the result of thread %q", id)
	}
	return th, nil
}

// DeleteThread deletes the thread with its runs, their events and leases
// (a lease holder's next fenced write gets ErrLeaseLost).
func (s *Store) DeleteThread(ctx context.Context, tenant, id string) error {
	n, err := s.d.Exec(ctx, s.q.DeleteThread, tenant, id)
	if err != nil {
		return s.wrap(err, "delete thread %q", id)
	}
	if n == 0 {
		return s.notFound("thread", id, tenant)
	}
	return nil
}

// threadFilter builds the filter of q.
func (s *Store) threadFilter(tenant string, q db.ThreadQuery) (*filter[db.Thread], error) {
	if err := dbutil.ThreadStatus(q.Status, true); err != nil {
		return nil, err
	}
	mf, err := dbutil.MetadataFilter(q.Metadata)
	if err != nil {
		return nil, err
	}
	vf, err := dbutil.ObjectFilter("values", q.Values)
	if err != nil {
		return nil, err
	}
	f := newFilter[db.Thread](s.d)
	f.where("tenant = %s", tenant)
	if q.Status != "" {
		f.where("status = %s", string(q.Status))
	}
	if q.IDs != nil {
		f.where(s.d.InList("thread_id", "%s"), s.d.List(q.IDs))
	}
	f.contains("metadata", mf, func(_ db.Thread, md []byte) []byte { return md })
	f.contains("thread_values", vf, func(t db.Thread, _ []byte) []byte { return t.Values })
	if q.Title != "" {
		if cond := s.d.JSONTextContains("metadata", "title", "%s"); cond != "" {
			f.where(cond, q.Title)
		} else {
			lower := strings.ToLower(q.Title)
			f.matchGo(func(_ db.Thread, md []byte) bool { return titleHas(md, lower) })
		}
	}
	return f, nil
}

// titleHas reports whether the metadata JSON md has a string "title"
// containing the lower-cased text lower.
func titleHas(md []byte, lower string) bool {
	var m struct {
		Title any `json:"title"`
	}
	if json.Unmarshal(md, &m) != nil {
		return false
	}
	t, ok := m.Title.(string)
	return ok && strings.Contains(strings.ToLower(t), lower)
}

// SearchThreads lists the tenant's threads that match q: ID among q.IDs
// (when not nil), status equal, metadata and values containing q's,
// title containing q.Title; sorted by q.SortBy (thread_id, status,
// created_at, updated_at; ties by ID), then paged.
func (s *Store) SearchThreads(ctx context.Context, tenant string, q db.ThreadQuery) ([]db.Thread, error) {
	return s.threads(tenant).page(ctx, s, q.Query, func() (*filter[db.Thread], error) { return s.threadFilter(tenant, q) })
}

// CountThreads counts the threads SearchThreads would find without
// paging.
func (s *Store) CountThreads(ctx context.Context, tenant string, q db.ThreadQuery) (int, error) {
	return s.threads(tenant).total(ctx, s, func() (*filter[db.Thread], error) { return s.threadFilter(tenant, q) })
}

func (s *Store) threads(tenant string) listing[db.Thread] {
	return listing[db.Thread]{what: "threads", sel: s.q.SelectThreads, count: s.q.CountThreads,
		sorts: dbutil.ThreadSort, idCol: "thread_id", scan: s.threadScan(tenant)}
}

// CopyThread copies the thread row (metadata, status, values, interrupts,
// error; not its runs) under the ID to (a new UUID when empty), created
// now. A taken ID is ErrConflict.
func (s *Store) CopyThread(ctx context.Context, tenant, from, to string) (db.Thread, error) {
	if to == "" {
		to = dbutil.NewID()
	}
	if err := db.CheckID("thread", to); err != nil {
		return db.Thread{}, err
	}
	var out db.Thread
	err := s.d.Write(ctx, func(tx Conn) error {
		if _, err := s.getThread(ctx, tx, tenant, from); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, s.q.CopyThread, to, s.d.Time(dbutil.Now()), tenant, from)
		if err != nil {
			return s.wrap(err, "copy thread %q to %q", from, to)
		}
		if n == 0 {
			return s.fail(db.ErrConflict, "copy thread %q: thread %q exists", from, to)
		}
		if _, err := tx.Exec(ctx, s.q.CopyCheckpointMetadata, to, tenant, from); err != nil {
			return s.wrap(err, "copy the checkpoint metadata of thread %q to %q", from, to)
		}
		out, err = s.getThread(ctx, tx, tenant, to)
		return err
	})
	return out, err
}

// SetThreadTTL replaces the thread's TTL and counts its expiry from now.
func (s *Store) SetThreadTTL(ctx context.Context, tenant, id string, ttl *db.TTL) (db.Thread, error) {
	us, strategy, err := dbutil.ThreadTTL(ttl)
	if err != nil {
		return db.Thread{}, err
	}
	now := dbutil.Now()
	var expires time.Time
	if ttl != nil {
		expires = now.Add(ttl.Duration)
	}
	var out db.Thread
	err = s.d.Write(ctx, func(tx Conn) error {
		n, err := tx.Exec(ctx, s.q.SetThreadTTL, us, strategy, s.d.Time(now), s.nullTime(expires), tenant, id)
		if err != nil {
			return s.wrap(err, "set the TTL of thread %q", id)
		}
		if n == 0 {
			return s.notFound("thread", id, tenant)
		}
		out, err = s.getThread(ctx, tx, tenant, id)
		return err
	})
	return out, err
}

// ExpiredThreads lists idle threads of every tenant expired at now, the
// longest expired first (nil for none).
func (s *Store) ExpiredThreads(ctx context.Context, now time.Time, limit int) ([]db.ExpiredThread, error) {
	if limit <= 0 {
		return nil, dbutil.Invalid("limit %d is not positive", limit)
	}
	scan := func(r Row) (db.ExpiredThread, error) {
		var e db.ExpiredThread
		err := r.Scan(&e.Tenant, &e.ThreadID, &e.Strategy)
		return e, err
	}
	out, err := collect(ctx, s.d.Reader(), scan, s.q.ExpiredThreads, s.d.Time(now), limit)
	if err != nil {
		return nil, s.wrap(err, "list expired threads")
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// ExpireThread deletes the thread (delete) or clears its expiry
// (keep_latest) if it is still expired and idle at now.
func (s *Store) ExpireThread(ctx context.Context, tenant, id string, now time.Time) (string, bool, error) {
	var strategy string
	var ok bool
	err := s.d.Write(ctx, func(tx Conn) error {
		err := tx.QueryRow(ctx, s.q.ExpiredThread, s.d.Time(now), tenant, id).Scan(&strategy)
		if s.d.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return s.wrap(err, "expire thread %q", id)
		}
		ok = true
		if strategy == db.TTLKeepLatest {
			_, err = tx.Exec(ctx, s.q.KeepExpiredThread, tenant, id)
		} else {
			strategy = db.TTLDelete
			_, err = tx.Exec(ctx, s.q.DeleteThread, tenant, id)
		}
		return s.wrap(err, "expire thread %q", id)
	})
	if err != nil {
		return "", false, err
	}
	return strategy, ok, nil
}
