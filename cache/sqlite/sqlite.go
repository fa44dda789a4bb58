// Package sqlite is a cache.Cache that keeps node results in a SQLite
// database file, so that they survive a restart of the process. The file
// may be shared with checkpoint/sqlite and store/sqlite (each keeps its own
// tables), and by several processes at once.
//
// Expired entries are never returned. They are deleted lazily: every
// sweepEvery Sets (and whenever Sweep is called) one statement deletes all
// expired rows. The cache is not bounded in size otherwise: give entries a
// TTL, or call Clear, when the inputs of a node keep changing.
//
// Namespaces, keys and values are stored as BLOBs, byte for byte, so any
// bytes (NULs included) are kept exactly.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/cache"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// Component is the name under which the cache's schema migrations are
// recorded in the database's schema_migrations table.
const Component = "cache"

// migrations is the cache's schema, oldest first. Never edit a released
// step: append a new one.
var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
-- One row per entry. expires: Unix nanoseconds after which the entry is
-- gone, 0 for never.
CREATE TABLE cache_entries (
	ns      BLOB    NOT NULL,
	key     BLOB    NOT NULL,
	value   BLOB    NOT NULL,
	expires INTEGER NOT NULL,
	PRIMARY KEY (ns, key)
) WITHOUT ROWID;
CREATE INDEX cache_entries_expires ON cache_entries (expires) WHERE expires > 0;
`}}

// sweepEvery is how many Sets of one Cache pass between two sweeps of the
// expired rows.
const sweepEvery = 256

const (
	qGet = `SELECT value FROM cache_entries WHERE ns = ? AND key = ? AND (expires = 0 OR expires > ?)`
	qSet = `INSERT INTO cache_entries (ns, key, value, expires) VALUES (?, ?, ?, ?)
	ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expires = excluded.expires`
	qSweep    = `DELETE FROM cache_entries WHERE expires > 0 AND expires <= ?`
	qClearAll = `DELETE FROM cache_entries`
)

// Cache is a cache.Cache backed by a SQLite database file. It is safe for
// concurrent use. Create one with Open and release it with Close.
type Cache struct {
	db       *sqlitedb.DB
	now      func() time.Time
	get, set *sql.Stmt
	sets     atomic.Uint64
}

var _ cache.Cache = (*Cache)(nil)

// Open opens (creating when missing) the SQLite database at path, with its
// directory, brings the cache's table up to date and returns a Cache on it.
// It fails with an error wrapping sqlitedb.ErrNewerSchema when the file was
// written by a newer version of this package.
func Open(ctx context.Context, path string) (*Cache, error) {
	db, err := sqlitedb.Open(ctx, path, Component, migrations)
	if err != nil {
		return nil, fmt.Errorf("cache/sqlite: %w", err)
	}
	c := &Cache{db: db, now: time.Now}
	if c.get, err = db.Read.PrepareContext(ctx, qGet); err == nil {
		c.set, err = db.Write.PrepareContext(ctx, qSet)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("cache/sqlite: open %s: prepare: %w", path, err)
	}
	return c, nil
}

// Close closes the database. The Cache must not be used afterwards.
func (c *Cache) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{c.get, c.set} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, c.db.Close())
	return errors.Join(errs...)
}

// Get returns the value stored under ns/key; ok is false when there is none
// or it has expired.
func (c *Cache) Get(ctx context.Context, ns, key string) ([]byte, bool, error) {
	if err := cache.CheckGet(ctx, ns, key); err != nil {
		return nil, false, err
	}
	var value []byte
	err := c.get.QueryRowContext(ctx, []byte(ns), []byte(key), c.now().UnixNano()).Scan(&value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("cache/sqlite: get %s/%s: %w", ns, key, err)
	}
	if value == nil {
		value = []byte{}
	}
	return value, true, nil
}

// Set stores value under ns/key, replacing what was there. Every sweepEvery
// Sets it also deletes the expired rows.
func (c *Cache) Set(ctx context.Context, ns, key string, value []byte, ttl time.Duration) error {
	if err := cache.CheckSet(ctx, ns, key, value, ttl); err != nil {
		return err
	}
	var expires int64
	if ttl > 0 {
		expires = c.now().Add(ttl).UnixNano()
	}
	if value == nil {
		value = []byte{} // NULL would break the NOT NULL column
	}
	if _, err := c.set.ExecContext(ctx, []byte(ns), []byte(key), value, expires); err != nil {
		return fmt.Errorf("cache/sqlite: set %s/%s: %w", ns, key, err)
	}
	c.db.Committed()
	if c.sets.Add(1)%sweepEvery == 0 {
		if _, err := c.Sweep(ctx); err != nil {
			return fmt.Errorf("cache/sqlite: set %s/%s stored the value, then %w", ns, key, err)
		}
	}
	return nil
}

// Sweep deletes every expired entry now and returns how many it deleted.
// Set calls it every sweepEvery Sets; call it yourself to reclaim space
// sooner.
func (c *Cache) Sweep(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("cache/sqlite: sweep: %w", err)
	}
	res, err := c.db.Write.ExecContext(ctx, qSweep, c.now().UnixNano())
	if err != nil {
		return 0, fmt.Errorf("cache/sqlite: sweep the expired entries: %w", err)
	}
	c.db.Committed()
	n, _ := res.RowsAffected()
	return n, nil
}

// clearChunk is how many namespaces one DELETE of Clear names, well under
// SQLite's limit on bound parameters.
const clearChunk = 500

// Clear removes every entry of the given namespaces, or every entry when
// none is given, in one transaction.
func (c *Cache) Clear(ctx context.Context, namespaces ...string) error {
	if err := cache.CheckClear(ctx, namespaces); err != nil {
		return err
	}
	if err := c.clear(ctx, namespaces); err != nil {
		return fmt.Errorf("cache/sqlite: clear %d namespace(s) (0: all): %w", len(namespaces), err)
	}
	c.db.Committed()
	return nil
}

func (c *Cache) clear(ctx context.Context, namespaces []string) error {
	if len(namespaces) == 0 {
		_, err := c.db.Write.ExecContext(ctx, qClearAll)
		return err
	}
	tx, err := c.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for chunk := range slices.Chunk(namespaces, clearChunk) {
		args := make([]any, len(chunk))
		for i, ns := range chunk {
			args[i] = []byte(ns)
		}
		q := qClearAll + ` WHERE ns IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}
