// Package sqlite is a store.Store that keeps items in a SQLite database
// file: the embedded long-term memory, which may share its file with the
// checkpoint/sqlite saver (each keeps its own tables and schema version).
//
// The file is opened in WAL mode with synchronous=NORMAL: a committed Put
// survives a crash of the process, but the last writes before a power
// failure or operating system crash may be lost.
//
// Semantics are those of store.Memory, checked by the suite in
// store/storetest. Namespaces are stored in one column, encoded so that
// comparing the bytes compares the namespaces element by element, and so
// that a prefix of elements is a prefix of bytes (["a"] is not a prefix of
// ["ab"]): Search and ListNamespaces read a range of the primary key, in
// the order they return. Expired items are invisible at once; they are
// deleted when Get meets them and by a sweep that Put runs now and then.
// Search filters are applied in Go, with store.Memory's comparison rules,
// on the items of the prefix in order.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/internal/sqlstore"
)

// Component is the name under which the store's schema migrations are
// recorded in the database's schema_migrations table.
const Component = "store"

// migrations is the store's schema, oldest first. Never edit a released
// step: append a new one.
var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE store_items (
	ns      BLOB    NOT NULL,
	key     TEXT    NOT NULL,
	value   TEXT    NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	expires INTEGER,
	PRIMARY KEY (ns, key)
) WITHOUT ROWID;

CREATE INDEX store_items_expires ON store_items (expires) WHERE expires IS NOT NULL;
`}, {Version: 2, SQL: `
CREATE TABLE store_vectors (
	ns   BLOB    NOT NULL,
	key  TEXT    NOT NULL,
	i    INTEGER NOT NULL,
	path TEXT    NOT NULL,
	vec  BLOB    NOT NULL,
	PRIMARY KEY (ns, key, i),
	FOREIGN KEY (ns, key) REFERENCES store_items (ns, key) ON DELETE CASCADE
) WITHOUT ROWID;
`}}

// sweepEvery is how often, at most, Put deletes the expired items.
const sweepEvery = time.Minute

// Store is a store.Store backed by a SQLite database file. It is safe for
// concurrent use; several Stores, in one process or several, may share a
// file. Create one with Open and release it with Close.
//
// Times are kept in Unix nanoseconds: an expiry beyond the year 2262 is
// kept as the year 2262.
type Store struct {
	db       *sqlitedb.DB
	now      func() time.Time // clock for Created, Updated and expiry
	maxBytes int              // size limit of one value
	index    *store.IndexConfig

	mu        sync.Mutex
	lastSweep time.Time
}

var _ store.Store = (*Store)(nil)

// Open opens (creating when missing) the SQLite database at path, with its
// directory, brings the store's tables up to date and returns a Store on
// it. It fails with an error wrapping sqlitedb.ErrNewerSchema when the file
// was written by a newer version of this package.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, Component, migrations)
	if err != nil {
		return nil, fmt.Errorf("store/sqlite: %w", err)
	}
	s := &Store{db: db, now: time.Now, lastSweep: time.Now(), maxBytes: store.DefaultMaxValueBytes}
	for _, o := range opts {
		o(s)
	}
	if s.index != nil {
		if err := s.index.Validate(); err != nil {
			db.Close()
			return nil, fmt.Errorf("store/sqlite: %w", err)
		}
	}
	return s, nil
}

// WithIndex makes the store embed items on Put and answer a Search's
// Query.Text by similarity (see store.IndexConfig). Vectors live in their
// own table, store_vectors, as little-endian float32s; a semantic search
// reads every vector under the prefix (exact search) and keeps the best
// Offset+Limit in memory.
func WithIndex(cfg store.IndexConfig) Option {
	return func(s *Store) {
		cfg.Fields = append([]string(nil), cfg.Fields...)
		s.index = &cfg
	}
}

// Option configures Open.
type Option func(*Store)

// WithMaxBytes sets the most bytes of one value that Put accepts and that
// Get and Search return; beyond it they fail with an error wrapping
// store.ErrTooLarge (a Search fails on the first such item). The default is
// store.DefaultMaxValueBytes; n <= 0 keeps it. A value stored under a
// larger limit is refused on read, though the driver has read it by then.
func WithMaxBytes(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// Close closes the database. The Store must not be used afterwards.
func (s *Store) Close() error { return s.db.Close() }

const qItem = `SELECT ns, key, value, created, updated, expires FROM store_items`

// Get returns a copy of the live item, or an error wrapping
// store.ErrNotFound. An expired item is deleted when Get finds it.
func (s *Store) Get(ctx context.Context, namespace []string, key string) (*store.Item, error) {
	if err := sqlstore.CheckItem(ctx, namespace, key); err != nil {
		return nil, err
	}
	ns := encodeNamespace(namespace)
	it, expires, err := scanItem(s.db.Read.QueryRowContext(ctx, qItem+` WHERE ns = ? AND key = ?`, ns, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: get %s: %w", sqlstore.ItemName(namespace, key), store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	if now := unixNano(s.now()); expires.Valid && expires.Int64 <= now {
		// The item is invisible whether or not this succeeds; the sweep
		// in Put deletes what is left. The condition spares an item put
		// again meanwhile.
		_, _ = s.db.Write.ExecContext(ctx, `DELETE FROM store_items WHERE ns = ? AND key = ? AND expires <= ?`, ns, key, now)
		return nil, fmt.Errorf("store: get %s: %w", sqlstore.ItemName(namespace, key), store.ErrNotFound)
	}
	if err := store.CheckValueSize("read", namespace, key, len(it.Value), s.maxBytes); err != nil {
		return nil, err
	}
	return it, nil
}

// scanItem reads one row of qItem.
func scanItem(sc interface{ Scan(...any) error }) (*store.Item, sql.NullInt64, error) {
	var ns, value []byte
	var it store.Item
	var created, updated int64
	var expires sql.NullInt64
	if err := sc.Scan(&ns, &it.Key, &value, &created, &updated, &expires); err != nil {
		return nil, expires, err
	}
	it.Value = value
	var err error
	if it.Namespace, err = decodeNamespace(ns); err != nil {
		return nil, expires, fmt.Errorf("item %q: %w", it.Key, err)
	}
	it.Created, it.Updated = time.Unix(0, created), time.Unix(0, updated)
	if expires.Valid {
		it.Expires = time.Unix(0, expires.Int64)
	}
	return &it, expires, nil
}

// Put creates or replaces an item. value must be valid JSON. Replacing a
// live item keeps its Created time; Updated is always the time of the Put.
// With opts.TTL > 0 the item expires that long after the Put; otherwise it
// never expires, even if the item it replaces had a TTL.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts store.PutOptions) error {
	if err := sqlstore.CheckPut(ctx, namespace, key, value, opts, s.maxBytes); err != nil {
		return err
	}
	now := s.now()
	var expires any
	if opts.TTL > 0 {
		expires = unixNano(now.Add(opts.TTL))
	}
	var vecs []store.Vector
	if s.index != nil {
		// Embed before the transaction: the embedder may be a network
		// call, and a failure must leave the item as it was.
		var err error
		if vecs, err = s.index.EmbedItem(ctx, value, s.index.FieldsFor(opts)); err != nil {
			return fmt.Errorf("store: put %s: %w", sqlstore.ItemName(namespace, key), err)
		}
	}
	ns := encodeNamespace(namespace)
	args := []any{ns, key, string(value), unixNano(now), expires}
	err := s.inWriteTx(ctx, s.sweepDue(now), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO store_items (ns, key, value, created, updated, expires)
			VALUES (?1, ?2, ?3, ?4, ?4, ?5)
			ON CONFLICT (ns, key) DO UPDATE SET
				value = excluded.value,
				created = CASE WHEN store_items.expires IS NULL OR store_items.expires > excluded.updated
					THEN store_items.created ELSE excluded.created END,
				updated = excluded.updated,
				expires = excluded.expires`, args...)
		if err != nil {
			return err
		}
		return putVectors(ctx, tx, ns, key, vecs)
	})
	if err != nil {
		return fmt.Errorf("store: put %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	return nil
}

// sweepDue reports whether the expired items should be swept now, and if so
// notes that they are.
func (s *Store) sweepDue(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) < sweepEvery {
		return false
	}
	s.lastSweep = now
	return true
}

// inWriteTx runs fn in a write transaction, after deleting the expired
// items when sweep is set, and commits when fn returns nil.
func (s *Store) inWriteTx(ctx context.Context, sweep bool, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if sweep {
		if _, err := tx.ExecContext(ctx, `DELETE FROM store_items WHERE expires <= ?`, unixNano(s.now())); err != nil {
			return fmt.Errorf("delete expired items: %w", err)
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.db.Committed()
	return nil
}

// Delete removes an item; deleting a missing item returns nil.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := sqlstore.CheckItem(ctx, namespace, key); err != nil {
		return err
	}
	err := s.inWriteTx(ctx, false, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM store_items WHERE ns = ? AND key = ?`, encodeNamespace(namespace), key)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	return nil
}

var (
	minNano = time.Unix(0, math.MinInt64)
	maxNano = time.Unix(0, math.MaxInt64)
)

// unixNano returns t in Unix nanoseconds, clamped to the int64 range.
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minNano):
		return math.MinInt64
	case t.After(maxNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}
