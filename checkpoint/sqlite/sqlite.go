// Package sqlite is a checkpoint.Saver that keeps checkpoints in a SQLite
// database file. It is the embedded default saver: no server to run, one
// file per application (shareable with store/sqlite), and safe for several
// goroutines and several processes at once.
//
// The file is opened in WAL mode with synchronous=NORMAL. A committed Put
// survives a crash of the process, but not necessarily a power failure or an
// operating system crash: the last transactions before one may be lost (the
// database itself stays consistent). That is the usual trade for a step that
// costs tens of microseconds instead of an fsync per step.
//
// Layout: one row per checkpoint (its metadata in columns, its versions,
// next tasks, join barriers and deferred nodes as JSON); one row per blob,
// keyed by thread, namespace, key and version, so a blob written once is
// shared by every later checkpoint that still has that version in force;
// one row per pending write, deleted with its checkpoint. Put is one
// transaction that takes the write lock first, so the check that the writer
// read the latest checkpoint and the insert cannot be interleaved with
// another writer, in this process or another.
//
// Semantics, error texts included, are those of checkpoint.Memory; the
// conformance suite in checkpoint/checkpointtest checks them.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// Component is the name under which the saver's schema migrations are
// recorded in the database's schema_migrations table.
const Component = "checkpoint"

// migrations is the saver's schema, oldest first. Never edit a released
// step: append a new one.
var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
-- One row per checkpoint. extra: JSON object of Metadata.Extra, NULL when
-- empty. checkpoint: JSON of the versions, next tasks, join barriers,
-- deferred nodes and creation time. created: Checkpoint.Created in Unix
-- nanoseconds (clamped to the int64 range), for Prune.
CREATE TABLE checkpoints (
	thread     TEXT    NOT NULL,
	ns         TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	parent     TEXT    NOT NULL,
	step       INTEGER NOT NULL,
	source     TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	extra      BLOB,
	checkpoint BLOB    NOT NULL,
	created    INTEGER NOT NULL,
	PRIMARY KEY (thread, ns, id)
) WITHOUT ROWID;

-- One row per blob, written by the first checkpoint that carries it and
-- shared by the later ones. version and base are uint64 stored as the int64
-- of the same bits; kind is 1 (full) or 2 (delta). The primary key puts
-- version before key so that the blobs of one step that share a version
-- (the engine gives keys updated together the same one) land side by side
-- in the tree: such a step dirties one or two pages, not one per key.
CREATE TABLE blobs (
	thread  TEXT    NOT NULL,
	ns      TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	version INTEGER NOT NULL,
	kind    INTEGER NOT NULL,
	base    INTEGER NOT NULL,
	data    BLOB,
	PRIMARY KEY (thread, ns, version, key)
) WITHOUT ROWID;

-- Pending writes of the tasks of the step after a checkpoint; deleted with
-- it.
CREATE TABLE writes (
	thread        TEXT    NOT NULL,
	ns            TEXT    NOT NULL,
	checkpoint_id TEXT    NOT NULL,
	task_id       TEXT    NOT NULL,
	idx           INTEGER NOT NULL,
	key           TEXT    NOT NULL,
	value         BLOB,
	PRIMARY KEY (thread, ns, checkpoint_id, task_id, idx),
	FOREIGN KEY (thread, ns, checkpoint_id) REFERENCES checkpoints (thread, ns, id) ON DELETE CASCADE
) WITHOUT ROWID;
`}, {Version: 2, SQL: `
-- CRC-32C checksums (checkpoint.Checksum), NULL in rows written before
-- this version, which are read without the check. checkpoints.sum covers
-- parent, step, source, run_id, extra and checkpoint; blobs.sum is
-- checkpoint.BlobChecksum; writes.sum is checkpoint.WriteChecksum.
ALTER TABLE checkpoints ADD COLUMN sum INTEGER;
ALTER TABLE blobs ADD COLUMN sum INTEGER;
ALTER TABLE writes ADD COLUMN sum INTEGER;
`}}

// Saver is a checkpoint.Saver backed by a SQLite database file. It is safe
// for concurrent use; several Savers, in one process or several, may share
// a file. Create one with Open and release it with Close.
//
// Stored values: versions and blob bases are uint64 kept as the int64 of the
// same bits; times are kept exactly in the checkpoint JSON, and in a column
// of Unix nanoseconds (clamped to the int64 range) for Prune.
type Saver struct {
	db       *sqlitedb.DB
	now      func() time.Time // clock for Prune's OlderThan
	maxBytes int              // size limit of one row, blob or write

	// Statements of the hot paths, prepared once.
	insertCP, getBlob, insertW      *sql.Stmt // on the write pool
	latestR, byID, blobs, chain, wr *sql.Stmt // on the read pool

	mu          sync.Mutex
	insertBlobs map[int]*sql.Stmt // rows per statement -> multi-row INSERT
	insertCPs   map[int]*sql.Stmt // checkpoints per statement -> PutBatch's INSERT
}

var _ checkpoint.Saver = (*Saver)(nil)

// Option configures Open.
type Option func(*Saver)

// WithMaxBytes sets the Saver's size limit: the most bytes of one
// checkpoint row (its encoded checkpoint and metadata, without blobs), of
// one blob's data and of one pending write's value that Put and PutWrites
// accept and that Get and List read back; beyond it they fail with an error
// wrapping checkpoint.ErrTooLarge. The default is
// checkpoint.DefaultMaxBytes; n <= 0 keeps it. A row stored under a larger
// limit is refused on read, though the driver has read it by then.
func WithMaxBytes(n int) Option {
	return func(s *Saver) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// Open opens (creating when missing) the SQLite database at path, with its
// directory, brings the saver's tables up to date and returns a Saver on
// it. It fails with an error wrapping sqlitedb.ErrNewerSchema when the file
// was written by a newer version of this package.
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	db, err := sqlitedb.Open(ctx, path, Component, migrations)
	if err != nil {
		return nil, fmt.Errorf("checkpoint/sqlite: %w", err)
	}
	s := &Saver{db: db, now: time.Now, maxBytes: checkpoint.DefaultMaxBytes, insertBlobs: make(map[int]*sql.Stmt), insertCPs: make(map[int]*sql.Stmt)}
	for _, o := range opts {
		o(s)
	}
	prepare := []struct {
		dst  **sql.Stmt
		pool *sql.DB
		sql  string
	}{
		{&s.insertCP, db.Write, qInsertCheckpoint},
		{&s.getBlob, db.Write, qGetBlob},
		{&s.insertW, db.Write, qInsertWrite},
		{&s.latestR, db.Read, qSelectCheckpoint + ` WHERE thread = ? AND ns = ? ORDER BY id DESC LIMIT 1`},
		{&s.byID, db.Read, qSelectCheckpoint + ` WHERE thread = ? AND ns = ? AND id = ?`},
		{&s.blobs, db.Read, qChains},
		{&s.chain, db.Read, qChain},
		{&s.wr, db.Read, qWrites},
	}
	for _, p := range prepare {
		if *p.dst, err = p.pool.PrepareContext(ctx, p.sql); err != nil {
			s.Close()
			return nil, fmt.Errorf("checkpoint/sqlite: open %s: prepare: %w", path, err)
		}
	}
	return s, nil
}

// Close closes the database. The Saver must not be used afterwards.
func (s *Saver) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.insertCP, s.getBlob, s.insertW, s.latestR, s.byID, s.blobs, s.chain, s.wr} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	s.mu.Lock()
	for _, m := range []map[int]*sql.Stmt{s.insertBlobs, s.insertCPs} {
		for _, st := range m {
			errs = append(errs, st.Close())
		}
		clear(m)
	}
	s.mu.Unlock()
	errs = append(errs, s.db.Close())
	return errors.Join(errs...)
}

// Size returns the bytes the database uses on disk: the database file plus
// its write-ahead log. Other components sharing the file are counted too.
func (s *Saver) Size(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.db.Size()
	if err != nil {
		return 0, fmt.Errorf("checkpoint/sqlite: %w", err)
	}
	return n, nil
}

const (
	qLatest = `SELECT id FROM checkpoints WHERE thread = ? AND ns = ? ORDER BY id DESC LIMIT 1`

	// qInsertCheckpoint inserts a checkpoint only when the writer read the
	// latest one (?11, "" for none) and the new ID sorts after it; it
	// inserts nothing otherwise, and Put then finds out why.
	qInsertCheckpoint = `INSERT INTO checkpoints
	(thread, ns, id, parent, step, source, run_id, extra, checkpoint, created, sum)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12
	WHERE coalesce((SELECT id FROM checkpoints WHERE thread = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1), '') = ?11
	AND ?3 > ?11`

	qGetBlob = `SELECT kind, base, data FROM blobs WHERE thread = ? AND ns = ? AND key = ? AND version = ?`

	qSelectCheckpoint = `SELECT id, parent, step, source, run_id, extra, checkpoint, sum FROM checkpoints`

	// qChains returns the blobs of the chains that rebuild the (key,
	// version) pairs of ?3, a JSON array of [hex key, version] pairs,
	// following the bases of deltas. A blob that is not stored is simply
	// absent; the caller reports the broken chain. CROSS JOIN keeps need as
	// the outer loop, so each blob is one primary key lookup.
	qChains = `WITH RECURSIVE need(key, version) AS (
	SELECT CAST(unhex(value ->> 0) AS TEXT), value ->> 1 FROM json_each(?3)
	UNION
	SELECT b.key, b.base FROM need CROSS JOIN blobs AS b
		ON b.thread = ?1 AND b.ns = ?2 AND b.version = need.version AND b.key = need.key
	WHERE b.kind = 2
)
SELECT b.key, b.version, b.kind, b.base, b.data, b.sum FROM need CROSS JOIN blobs AS b
	ON b.thread = ?1 AND b.ns = ?2 AND b.version = need.version AND b.key = need.key`

	// qChain is qChains for a need list in which every key appears once
	// (one checkpoint's versions): the chains cannot overlap, so each blob
	// is fetched once, with its data, as the walk reaches it. The walk
	// follows a delta only to a smaller version (compared as uint64), so it
	// ends even on a damaged chain.
	qChain = `WITH RECURSIVE chain(key, version, kind, base, data, sum) AS (
	SELECT b.key, b.version, b.kind, b.base, b.data, b.sum FROM json_each(?3) AS j CROSS JOIN blobs AS b
		ON b.thread = ?1 AND b.ns = ?2 AND b.version = j.value ->> 1 AND b.key = CAST(unhex(j.value ->> 0) AS TEXT)
	UNION ALL
	SELECT b.key, b.version, b.kind, b.base, b.data, b.sum FROM chain CROSS JOIN blobs AS b
		ON b.thread = ?1 AND b.ns = ?2 AND b.version = chain.base AND b.key = chain.key
	WHERE chain.kind = 2 AND CASE WHEN (chain.base < 0) = (chain.version < 0)
		THEN chain.base < chain.version ELSE chain.version < 0 END
)
SELECT key, version, kind, base, data, sum FROM chain`

	qWrites = `SELECT checkpoint_id, task_id, idx, key, value, sum FROM writes
	WHERE thread = ? AND ns = ? AND checkpoint_id BETWEEN ? AND ?
	ORDER BY checkpoint_id, task_id, idx`
)

// maxBlobRows is the most blobs one INSERT statement carries.
const maxBlobRows = 32

// blobInsert returns the prepared statement inserting n blobs (n <=
// maxBlobRows), ignoring those already stored. Parameters: ?1 thread, ?2
// namespace, then key, version, kind, base, data and sum of each blob (binding
// thread and namespace once is cheaper than once per row).
func (s *Saver) blobInsert(ctx context.Context, n int) (*sql.Stmt, error) {
	return s.rowsInsert(ctx, s.insertBlobs, n, `INSERT INTO blobs (thread, ns, key, version, kind, base, data, sum) VALUES `,
		"?1, ?2, ", 3, 6, ` ON CONFLICT DO NOTHING`)
}

// rowsInsert returns, from cache (under s.mu) or prepared on the write pool
// and cached, the statement head + n rows + tail, where row i is
// "(" + fixed + width parameters numbered from first + width*i + ")".
func (s *Saver) rowsInsert(ctx context.Context, cache map[int]*sql.Stmt, n int, head, fixed string, first, width int, tail string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := cache[n]; st != nil {
		return st, nil
	}
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + fixed)
		for j := range width {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "?%d", first+width*i+j)
		}
		b.WriteString(")")
	}
	b.WriteString(tail)
	st, err := s.db.Write.PrepareContext(ctx, b.String())
	if err != nil {
		return nil, err
	}
	cache[n] = st
	return st, nil
}

var errEmptyThread = errors.New("checkpoint: thread ID is empty")

func notFound(ref checkpoint.Ref) error {
	return fmt.Errorf("%s: %w", ref, checkpoint.ErrNotFound)
}

var (
	minNano = time.Unix(0, math.MinInt64)
	maxNano = time.Unix(0, math.MaxInt64)
)

// unixNano returns t in Unix nanoseconds, clamped to the int64 range, so
// that comparing the results compares the times (the zero time is oldest).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minNano):
		return math.MinInt64
	case t.After(maxNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}
