// Package postgres is a checkpoint.Saver that stores checkpoints in
// PostgreSQL, for graph runs that must survive a restart or be shared by
// several processes.
//
// It follows the semantics of checkpoint.Memory exactly (the conformance
// suite in checkpoint/checkpointtest checks both). Its tables live in one
// schema (see WithSchema):
//
//	checkpoint_heads   (thread, ns, latest_id)            one row per thread namespace
//	checkpoints        (thread, ns, id, parent, step, source, run_id,
//	                    metadata jsonb, checkpoint jsonb, created)
//	checkpoint_blobs   (thread, ns, key, version, kind, base, data bytea)
//	checkpoint_writes  (thread, ns, checkpoint_id, task_id, idx, key, value bytea)
//
// A checkpoint row holds the checkpoint's JSON without its blobs; blobs are
// stored once per thread, namespace, key and version, and Get rebuilds each
// key's chain with one recursive query. The heads row of a namespace names
// its latest checkpoint: Put moves it with a compare-and-set UPDATE, which
// both detects a writer that read a stale latest (checkpoint.ErrConflict)
// and serializes the writers of one namespace, while writers of other
// namespaces never wait for each other.
//
// Versions are uint64 in Go and bigint in the database, stored bit for bit
// (versions of 2^63 and above read as negative numbers in SQL). Text columns
// use the "C" collation, so the database orders IDs, keys and task IDs as Go
// compares strings.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/pgdb"
)

// Saver is a checkpoint.Saver backed by PostgreSQL. It is safe for
// concurrent use, also by several processes sharing one database.
type Saver struct {
	pool     *pgxpool.Pool
	owned    bool // Close closes the pool
	maxBytes int  // size limit of one row, blob or write
}

var _ checkpoint.Saver = (*Saver)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	schema   string
	maxBytes int
}

// WithMaxBytes sets the Saver's size limit: the most bytes of one
// checkpoint row (its checkpoint and metadata JSON, without blobs), of one
// blob's data and of one pending write's value that Put and PutWrites
// accept and that Get and List read back; beyond it they fail with an error
// wrapping checkpoint.ErrTooLarge. The default is
// checkpoint.DefaultMaxBytes; n <= 0 keeps it. A row stored under a larger
// limit is refused on read, though it has been received by then. Reads
// allow a checkpoint row twice the limit: jsonb renders JSON with a space
// after each ':' and ',', so a row comes back longer than it was put, never
// twice as long.
func WithMaxBytes(n int) Option {
	return func(o *options) { o.maxBytes = n }
}

// WithSchema makes Open keep the tables in the named schema, created when
// missing, instead of the connection's default (usually "public"). Several
// Savers, or a Saver and a store, may share a schema.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Open connects to the database dsn names (a postgres:// URL or key=value
// string), creates or upgrades the tables, and returns a Saver that owns its
// connection pool: Close closes it. Open refuses a database migrated by a
// newer version of Trellis (the error wraps pgdb.ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, opts ...Option) (*Saver, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	pool, err := pgdb.Connect(ctx, dsn, o.schema)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: open: %w", err)
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Saver using an existing pool, whose connections' search_path
// selects the schema of the tables; it creates or upgrades the tables as
// Open does. Close leaves the pool open; the caller closes it after the
// Saver's last use. Of opts, WithSchema is ignored (the pool's search_path
// decides).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Saver, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := pgdb.Migrate(ctx, pool, component, migrations); err != nil {
		return nil, fmt.Errorf("checkpoint/postgres: %w", err)
	}
	s := &Saver{pool: pool, maxBytes: checkpoint.DefaultMaxBytes}
	if o.maxBytes > 0 {
		s.maxBytes = o.maxBytes
	}
	return s, nil
}

// Close releases the connection pool when Open created it. The Saver must
// not be used afterwards.
func (s *Saver) Close() {
	if s.owned {
		s.pool.Close()
	}
}

// component is the Saver's name in schema_migrations.
const component = "checkpoint"

// migrations are the versions of the Saver's tables; see pgdb.Migrate.
var migrations = []string{
	// 1: the initial tables.
	`
CREATE TABLE checkpoint_heads (
	thread    text COLLATE "C" NOT NULL,
	ns        text COLLATE "C" NOT NULL,
	latest_id text COLLATE "C" NOT NULL,
	PRIMARY KEY (thread, ns)
);

CREATE TABLE checkpoints (
	thread     text COLLATE "C" NOT NULL,
	ns         text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	parent     text COLLATE "C" NOT NULL,
	step       bigint           NOT NULL,
	source     text COLLATE "C" NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	metadata   jsonb            NOT NULL,
	checkpoint jsonb            NOT NULL,
	created    timestamptz      NOT NULL,
	PRIMARY KEY (thread, ns, id)
);

CREATE TABLE checkpoint_blobs (
	thread  text COLLATE "C" NOT NULL,
	ns      text COLLATE "C" NOT NULL,
	key     text COLLATE "C" NOT NULL,
	version bigint           NOT NULL,
	kind    smallint         NOT NULL,
	base    bigint           NOT NULL,
	data    bytea,
	PRIMARY KEY (thread, ns, key, version)
);

CREATE TABLE checkpoint_writes (
	thread        text COLLATE "C" NOT NULL,
	ns            text COLLATE "C" NOT NULL,
	checkpoint_id text COLLATE "C" NOT NULL,
	task_id       text COLLATE "C" NOT NULL,
	idx           bigint           NOT NULL,
	key           text COLLATE "C" NOT NULL,
	value         bytea,
	PRIMARY KEY (thread, ns, checkpoint_id, task_id, idx),
	FOREIGN KEY (thread, ns, checkpoint_id) REFERENCES checkpoints (thread, ns, id) ON DELETE CASCADE
);
`,
	// 2: checksums, NULL in rows written before, which are read without
	// the check. checkpoints.sum is the md5 of the checkpoint and metadata
	// as the server renders them (rowSum), computed and compared by the
	// server, since jsonb does not keep the bytes the client sent; the
	// blobs' and writes' sums are checkpoint.BlobChecksum and
	// checkpoint.WriteChecksum, computed and compared by the client.
	`
ALTER TABLE checkpoints ADD COLUMN sum text;
ALTER TABLE checkpoint_blobs ADD COLUMN sum bigint;
ALTER TABLE checkpoint_writes ADD COLUMN sum bigint;
`,
}

// rowSum is the SQL expression of a checkpoint row's checksum, over its
// stored checkpoint and metadata columns.
const rowSum = `md5(checkpoint::text || ' ' || metadata::text)`

// tables are the Saver's tables, for Size.
var tables = []string{"checkpoint_heads", "checkpoints", "checkpoint_blobs", "checkpoint_writes"}

// Size returns the disk space the Saver's tables use, indexes and TOAST
// included (the sum of pg_total_relation_size), in bytes.
func (s *Saver) Size(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx,
		`SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)::bigint FROM unnest($1::text[]) AS t`,
		tables).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("checkpoint/postgres: size: %w", err)
	}
	return n, nil
}

var errEmptyThread = errors.New("checkpoint: thread ID is empty")

// readOnly is the transaction mode of Get and List: one snapshot for the
// checkpoint rows, their blobs and their writes, so that a concurrent Prune
// or DeleteThread cannot make a kept checkpoint look broken.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// readWrite is the transaction mode of the writing methods. It is set
// explicitly: the conflict check relies on READ COMMITTED re-reading the
// heads row after waiting for its lock.
var readWrite = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// inTx runs fn in a transaction with opts, committing when fn returns nil.
//
// ctx bounds the work, not the COMMIT: a COMMIT interrupted by a canceled
// context may have taken effect on the server though the client reports an
// error, which would break "a failed Put wrote nothing". Once every
// statement has succeeded the commit is one short round trip, so it runs
// without ctx's cancellation, bounded by commitTimeout.
//
// The transaction is a pgdb.Tx, whose BEGIN goes with its first statement
// (and the writes others queue in it with the next one or the COMMIT).
func (s *Saver) inTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := pgdb.Begin(ctx, s.pool, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		// The rollback must run even when ctx is canceled, so that the
		// connection goes back to the pool clean.
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	return tx.Commit(cctx)
}

// commitTimeout bounds a COMMIT, which runs without the caller's context
// (see inTx). Only a dead connection makes a COMMIT take this long.
const commitTimeout = 30 * time.Second

// isCode reports whether err is a PostgreSQL error with that SQLSTATE.
func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// SQLSTATE codes the Saver reacts to.
const (
	uniqueViolation = "23505"
)

// notFound is checkpoint.Memory's not-found error for ref.
func notFound(ref checkpoint.Ref) error {
	return fmt.Errorf("%s: %w", ref, checkpoint.ErrNotFound)
}
