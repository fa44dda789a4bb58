// Package postgres is a store.Store kept in PostgreSQL, for long-term
// memory shared by processes and surviving restarts.
//
// It follows the semantics of store.Memory exactly (the conformance suite in
// store/storetest checks both). Items live in one table of the schema chosen
// with WithSchema:
//
//	store_items (namespace text[], key, value jsonb, created, updated, expires)
//
// Namespaces are text arrays in the "C" collation, so the database orders
// them element by element as Go's slices.Compare does, and prefix matches
// compare elements, never joined strings ("ab" does not start with "a").
// Values are jsonb: Search filters compare a top-level field with jsonb
// equality, under which numbers compare by value (1 equals 1.0 and 1e0;
// 9007199254740993 does not equal 9007199254740992), strings never equal
// numbers, and objects and arrays compare whole, element by element.
//
// Differences from store.Memory that come from PostgreSQL itself: jsonb
// cannot hold the string escape \u0000 nor numbers beyond the numeric type's
// range, text cannot hold NUL bytes or invalid UTF-8 (Put returns an error
// for these), times are kept to the microsecond, and numbers are compared
// exactly rather than at 512 bits of precision.
package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/internal/sqlstore"
)

// Store is a store.Store backed by PostgreSQL. It is safe for concurrent
// use, also by several processes sharing one database.
type Store struct {
	pool      *pgxpool.Pool
	owned     bool         // Close closes the pool
	lastSweep atomic.Int64 // UnixNano of the last sweep of expired items
	maxBytes  int          // size limit of one value on Put; reads allow twice as much
	index     *store.IndexConfig
}

var _ store.Store = (*Store)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	schema   string
	maxBytes int
	index    *store.IndexConfig
}

// WithIndex makes the store embed items on Put and answer a Search's
// Query.Text by similarity (see store.IndexConfig). Vectors live in their
// own table, store_vectors, as little-endian float32s in bytea (pgvector is
// not required); a semantic search reads every vector under the prefix
// that passes the filter (exact search) and keeps the best Offset+Limit in
// memory.
func WithIndex(cfg store.IndexConfig) Option {
	return func(o *options) {
		cfg.Fields = slices.Clone(cfg.Fields)
		o.index = &cfg
	}
}

// WithMaxBytes sets the most bytes of one value that Put accepts (beyond
// it, an error wrapping store.ErrTooLarge). Get and Search refuse a value
// the server returns with more than twice that many bytes: jsonb renders a
// value with a space after each ':' and ',', so a value can come back
// longer than it was put, but never twice as long. The default is
// store.DefaultMaxValueBytes; n <= 0 keeps it.
func WithMaxBytes(n int) Option {
	return func(o *options) { o.maxBytes = n }
}

// WithSchema makes Open keep the table in the named schema, created when
// missing, instead of the connection's default (usually "public").
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Open connects to the database dsn names (a postgres:// URL or key=value
// string), creates or upgrades the table, and returns a Store that owns its
// connection pool: Close closes it. Open refuses a database migrated by a
// newer version of Trellis (the error wraps pgdb.ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	pool, err := pgdb.Connect(ctx, dsn, o.schema)
	if err != nil {
		return nil, fmt.Errorf("store/postgres: open: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Store using an existing pool, whose connections' search_path
// selects the schema of the table; it creates or upgrades the table as Open
// does. Close leaves the pool open. Of opts, WithSchema is ignored (the
// pool's search_path decides).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.index != nil {
		if err := o.index.Validate(); err != nil {
			return nil, fmt.Errorf("store/postgres: %w", err)
		}
	}
	if err := pgdb.Migrate(ctx, pool, component, migrations); err != nil {
		return nil, fmt.Errorf("store/postgres: %w", err)
	}
	s := &Store{pool: pool, maxBytes: store.DefaultMaxValueBytes, index: o.index}
	if o.maxBytes > 0 {
		s.maxBytes = o.maxBytes
	}
	return s, nil
}

// Close releases the connection pool when Open created it. The Store must
// not be used afterwards.
func (s *Store) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// component is the Store's name in schema_migrations.
const component = "store"

// migrations are the versions of the Store's table; see pgdb.Migrate.
var migrations = []string{
	// 1: the initial table.
	`
CREATE TABLE store_items (
	namespace text[] COLLATE "C" NOT NULL,
	key       text   COLLATE "C" NOT NULL,
	value     jsonb              NOT NULL,
	created   timestamptz        NOT NULL,
	updated   timestamptz        NOT NULL,
	expires   timestamptz,
	PRIMARY KEY (namespace, key)
);

CREATE INDEX store_items_expires ON store_items (expires) WHERE expires IS NOT NULL;
`,
	// 2: the vectors of indexed items (semantic search).
	`
CREATE TABLE store_vectors (
	namespace text[] COLLATE "C" NOT NULL,
	key       text   COLLATE "C" NOT NULL,
	i         int                NOT NULL,
	path      text               NOT NULL,
	vec       bytea              NOT NULL,
	PRIMARY KEY (namespace, key, i),
	FOREIGN KEY (namespace, key) REFERENCES store_items (namespace, key) ON DELETE CASCADE
);
`,
}

// Get returns the live item, or an error wrapping store.ErrNotFound. An
// expired item is deleted by the same statement that finds it gone.
func (s *Store) Get(ctx context.Context, namespace []string, key string) (*store.Item, error) {
	if err := sqlstore.CheckItem(ctx, namespace, key); err != nil {
		return nil, err
	}
	now := time.Now()
	it := &store.Item{Namespace: slices.Clone(namespace), Key: key}
	var value []byte
	var expires *time.Time
	err := s.pool.QueryRow(ctx, `WITH gone AS (
	DELETE FROM store_items WHERE namespace = $1 AND key = $2 AND expires <= $3
)
SELECT value, created, updated, expires FROM store_items
WHERE namespace = $1 AND key = $2 AND (expires IS NULL OR expires > $3)`,
		namespace, key, now).Scan(&value, &it.Created, &it.Updated, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("store: get %s: %w", sqlstore.ItemName(namespace, key), store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("store: get %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	if err := store.CheckValueSize("read", namespace, key, len(value), 2*s.maxBytes); err != nil {
		return nil, err
	}
	it.Value = value
	if expires != nil {
		it.Expires = *expires
	}
	return it, nil
}

// Put creates or replaces an item, as store.Memory.Put does. value must be
// valid JSON. Replacing a live item keeps its Created time; Updated is
// always the time of the Put. With opts.TTL > 0 the item expires that long
// after the Put; otherwise it never expires, even if the item it replaces
// had a TTL.
func (s *Store) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts store.PutOptions) error {
	if err := sqlstore.CheckPut(ctx, namespace, key, value, opts, s.maxBytes); err != nil {
		return err
	}
	now := time.Now()
	var expires *time.Time
	if opts.TTL > 0 {
		e := now.Add(opts.TTL)
		expires = &e
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return putTx(ctx, tx, namespace, key, value, now, expires, vecs)
	})
	if err != nil {
		return fmt.Errorf("store: put %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	return nil
}

// putTx writes an item and replaces its vectors. It always deletes the old
// vectors, so an item replaced without an index (or by a store opened
// without one) is not found by stale vectors.
func putTx(ctx context.Context, tx pgx.Tx, namespace []string, key string, value json.RawMessage, now time.Time, expires *time.Time, vecs []store.Vector) error {
	_, err := tx.Exec(ctx, `INSERT INTO store_items (namespace, key, value, created, updated, expires)
VALUES ($1, $2, $3, $4, $4, $5)
ON CONFLICT (namespace, key) DO UPDATE SET
	value = EXCLUDED.value,
	updated = EXCLUDED.updated,
	expires = EXCLUDED.expires,
	created = CASE WHEN store_items.expires IS NULL OR store_items.expires > EXCLUDED.updated
		THEN store_items.created ELSE EXCLUDED.created END`,
		namespace, key, string(value), now, expires)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM store_vectors WHERE namespace = $1 AND key = $2`, namespace, key); err != nil {
		return fmt.Errorf("delete old vectors: %w", err)
	}
	if len(vecs) == 0 {
		return nil
	}
	idx, paths, blobs := make([]int32, len(vecs)), make([]string, len(vecs)), make([][]byte, len(vecs))
	for i, v := range vecs {
		idx[i], paths[i], blobs[i] = int32(i), v.Path, store.EncodeVector(v.Vector)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO store_vectors (namespace, key, i, path, vec)
SELECT $1, $2, t.i, t.path, t.vec FROM unnest($3::int[], $4::text[], $5::bytea[]) AS t(i, path, vec)`,
		namespace, key, idx, paths, blobs); err != nil {
		return fmt.Errorf("insert vectors: %w", err)
	}
	return nil
}

// Delete removes an item; deleting a missing item returns nil.
func (s *Store) Delete(ctx context.Context, namespace []string, key string) error {
	if err := sqlstore.CheckItem(ctx, namespace, key); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM store_items WHERE namespace = $1 AND key = $2`, namespace, key); err != nil {
		return fmt.Errorf("store: delete %s: %w", sqlstore.ItemName(namespace, key), err)
	}
	return nil
}

// Search returns the live items whose namespace starts with the elements of
// prefix (an empty prefix matches every namespace) and whose value is a JSON
// object with every field of q.Filter equal to the filter's value, compared
// as jsonb (see the package documentation). Items are ordered by namespace,
// element by element, then by key; q.Offset of them are skipped and at most
// q.Limit (10 when 0) returned.
func (s *Store) Search(ctx context.Context, prefix []string, q store.Query) ([]*store.Item, error) {
	limit, err := sqlstore.CheckSearch(ctx, prefix, q, s.index != nil)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	w := newWhere(now, prefix)
	for _, field := range slices.Sorted(maps.Keys(q.Filter)) {
		b, err := json.Marshal(q.Filter[field])
		if err != nil {
			return nil, fmt.Errorf("store: search: filter field %q: %w", field, err)
		}
		w.add("value -> (" + w.arg(field) + "::text) = " + w.arg(string(b)) + "::jsonb")
	}
	s.sweep(ctx, now)
	if q.Text != "" {
		return s.searchText(ctx, prefix, q, w)
	}
	rows, _ := s.pool.Query(ctx, `SELECT namespace, key, value, created, updated, expires FROM store_items`+w.String()+
		` ORDER BY namespace, key LIMIT `+w.arg(limit)+` OFFSET `+w.arg(q.Offset), w.args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Item, error) {
		// Fresh variables for every row: pgx may reuse the memory of a
		// scan target.
		it := &store.Item{}
		var value []byte
		var expires *time.Time
		if err := row.Scan(&it.Namespace, &it.Key, &value, &it.Created, &it.Updated, &expires); err != nil {
			return nil, err
		}
		if err := store.CheckValueSize("read", it.Namespace, it.Key, len(value), 2*s.maxBytes); err != nil {
			return nil, err
		}
		it.Value = value
		if expires != nil {
			it.Expires = *expires
		}
		return it, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	return out, nil
}

// ListNamespaces returns the distinct namespaces that hold live items and
// start with q.Prefix, each cut to q.MaxDepth elements when that is set
// (duplicates left by the cut are merged), as store.Memory.ListNamespaces
// does. They are sorted element by element (["a"] < ["a" "b"] < ["a-b"]);
// q.Offset of them are skipped and at most q.Limit (100 when 0) returned.
func (s *Store) ListNamespaces(ctx context.Context, q store.NamespaceQuery) ([][]string, error) {
	if err := sqlstore.CheckNamespaceQuery(ctx, q); err != nil {
		return nil, err
	}
	now := time.Now()
	w := newWhere(now, q.Prefix)
	ns := "namespace"
	if q.MaxDepth > 0 {
		d := w.arg(q.MaxDepth)
		ns = "CASE WHEN cardinality(namespace) > " + d + " THEN namespace[1:" + d + "] ELSE namespace END"
	}
	s.sweep(ctx, now)
	rows, _ := s.pool.Query(ctx, `SELECT DISTINCT `+ns+` AS ns FROM store_items`+w.String()+
		` ORDER BY ns LIMIT `+w.arg(cmp.Or(q.Limit, 100))+` OFFSET `+w.arg(q.Offset), w.args...)
	out, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	return out, nil
}

// where builds the WHERE clause of Search and ListNamespaces: live items
// under a prefix, and more conditions.
type where struct {
	conds []string
	args  []any
}

func newWhere(now time.Time, prefix []string) *where {
	w := &where{}
	w.add("(expires IS NULL OR expires > " + w.arg(now) + ")")
	if n := len(prefix); n > 0 {
		// The slice comparison is the definition; the range on the
		// whole array lets the primary key index find the rows. Every
		// array that starts with prefix sorts at or after prefix and
		// before prefix with "\x01" appended to its last element (text
		// holds no NUL, and "C" compares bytes), and no other does.
		upper := slices.Clone(prefix)
		upper[n-1] += "\x01"
		w.add("namespace >= " + w.arg(prefix) + "::text[] AND namespace < " + w.arg(upper) + "::text[]")
		w.add("cardinality(namespace) >= " + w.arg(n) + " AND namespace[1:" + w.arg(n) + "] = " + w.arg(prefix) + "::text[]")
	}
	return w
}

// arg adds a query argument and returns its placeholder.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

func (w *where) add(cond string) { w.conds = append(w.conds, cond) }

func (w *where) String() string {
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// sweepInterval is how often Search and ListNamespaces delete expired
// items; they never see them either way.
const sweepInterval = time.Minute

// sweep deletes up to a thousand expired items, at most once per
// sweepInterval per Store. It is housekeeping: rows other transactions hold
// are skipped, and a failure is left to the next sweep.
func (s *Store) sweep(ctx context.Context, now time.Time) {
	last := s.lastSweep.Load()
	if now.UnixNano()-last < int64(sweepInterval) || !s.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	_, _ = s.pool.Exec(ctx, `DELETE FROM store_items WHERE ctid = ANY (ARRAY (
	SELECT ctid FROM store_items WHERE expires <= $1 LIMIT 1000 FOR UPDATE SKIP LOCKED
))`, now)
}
