// Package sqlite is the service's store of record (db.DB) in a SQLite
// database file: the embedded default. Its tables, all prefixed trellis_,
// can share one file with the checkpoint saver, the long-term store and
// River, each with its own versioned migrations (internal/sqlitedb).
//
// Every table has the tenant first in its primary key and in every index,
// so a query cannot reach another tenant's rows by ID. At most one run per
// (tenant, thread) is running: a partial unique index on trellis_runs
// (tenant, thread_id) WHERE status = 'running' enforces it.
//
// Writes go through sqlitedb's single write connection (BEGIN IMMEDIATE),
// so a read-check-write transaction (claim, fence, append) cannot be
// interleaved with another writer of this process or another.
//
// Metadata and thread-values searches use JSON containment with
// PostgreSQL's jsonb @> semantics (nested objects, arrays, numbers by
// value). SQLite's JSON functions cannot express containment of nested
// arrays, so the rows that pass the SQL filters (tenant, graph, status,
// IDs) are decoded and matched in Go, and paging is applied after the
// match; a search therefore reads every row of the tenant that passes the
// SQL filters. That is the embedded default's trade: exact semantics equal
// to PostgreSQL's, at a cost linear in the tenant's rows.
//
// Times are stored as Unix microseconds (PostgreSQL's precision), so both
// stores return the same instants.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// Component is the name under which the tables' migrations are recorded
// in the file's schema_migrations table.
const Component = "server"

// migrations is the schema, oldest first. Never edit a released step:
// append a new one.
var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE trellis_assistants (
	tenant       TEXT    NOT NULL,
	assistant_id TEXT    NOT NULL,
	graph_id     TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	description  TEXT    NOT NULL,
	config       BLOB    NOT NULL,
	context      BLOB    NOT NULL,
	metadata     BLOB    NOT NULL,
	version      INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (tenant, assistant_id)
) WITHOUT ROWID;
CREATE INDEX trellis_assistants_graph ON trellis_assistants (tenant, graph_id);

CREATE TABLE trellis_assistant_versions (
	tenant       TEXT    NOT NULL,
	assistant_id TEXT    NOT NULL,
	version      INTEGER NOT NULL,
	graph_id     TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	description  TEXT    NOT NULL,
	config       BLOB    NOT NULL,
	context      BLOB    NOT NULL,
	metadata     BLOB    NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (tenant, assistant_id, version),
	FOREIGN KEY (tenant, assistant_id) REFERENCES trellis_assistants (tenant, assistant_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE trellis_threads (
	tenant        TEXT    NOT NULL,
	thread_id     TEXT    NOT NULL,
	status        TEXT    NOT NULL,
	metadata      BLOB    NOT NULL,
	thread_values BLOB,
	interrupts    BLOB    NOT NULL,
	error         TEXT    NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	PRIMARY KEY (tenant, thread_id)
) WITHOUT ROWID;
CREATE INDEX trellis_threads_status ON trellis_threads (tenant, status);

-- seq orders a thread's runs (creation order); lease_token is the last
-- lease token given, event_seq the last event Seq.
CREATE TABLE trellis_runs (
	tenant             TEXT    NOT NULL,
	run_id             TEXT    NOT NULL,
	thread_id          TEXT    NOT NULL,
	assistant_id       TEXT    NOT NULL,
	status             TEXT    NOT NULL,
	metadata           BLOB    NOT NULL,
	kwargs             BLOB    NOT NULL,
	multitask_strategy TEXT    NOT NULL,
	usage              BLOB,
	error              TEXT    NOT NULL,
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	ended_at           INTEGER,
	not_before         INTEGER,
	cancel_requested   TEXT    NOT NULL,
	seq                INTEGER NOT NULL,
	lease_token        INTEGER NOT NULL,
	event_seq          INTEGER NOT NULL,
	PRIMARY KEY (tenant, run_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_runs_thread ON trellis_runs (tenant, thread_id, seq);
CREATE UNIQUE INDEX trellis_runs_one_running ON trellis_runs (tenant, thread_id) WHERE status = 'running';
CREATE INDEX trellis_runs_ended ON trellis_runs (ended_at, tenant) WHERE ended_at IS NOT NULL;

CREATE TABLE trellis_run_events (
	tenant     TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	event      TEXT    NOT NULL,
	data       BLOB    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, run_id, seq),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE trellis_leases (
	tenant     TEXT    NOT NULL,
	run_id     TEXT    NOT NULL,
	thread_id  TEXT    NOT NULL,
	owner      TEXT    NOT NULL,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, run_id),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_leases_expiry ON trellis_leases (expires_at, tenant);
`}, {Version: 2, SQL: `
-- Metadata patched over saved checkpoints (PATCH /threads/{id}/state).
CREATE TABLE trellis_checkpoint_metadata (
	tenant        TEXT    NOT NULL,
	thread_id     TEXT    NOT NULL,
	checkpoint_id TEXT    NOT NULL,
	metadata      BLOB    NOT NULL,
	updated_at    INTEGER NOT NULL,
	PRIMARY KEY (tenant, thread_id, checkpoint_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
) WITHOUT ROWID;
`}, {Version: 3, SQL: `
-- A thread's TTL (microseconds; NULL: none), its strategy, and when it
-- expires (Unix microseconds; NULL: never), moved on by every activity.
ALTER TABLE trellis_threads ADD COLUMN ttl_us INTEGER;
ALTER TABLE trellis_threads ADD COLUMN ttl_strategy TEXT NOT NULL DEFAULT '';
ALTER TABLE trellis_threads ADD COLUMN expires_at INTEGER;
CREATE INDEX trellis_threads_expiry ON trellis_threads (expires_at) WHERE expires_at IS NOT NULL;
`}, {Version: 4, SQL: `
-- Scheduled runs. next_run_at is the next slot (Unix microseconds; NULL:
-- none left); firing a slot moves it with a compare-and-set, so a slot
-- fires at most once. A thread cron goes with its thread.
CREATE TABLE trellis_crons (
	tenant           TEXT    NOT NULL,
	cron_id          TEXT    NOT NULL,
	assistant_id     TEXT    NOT NULL,
	thread_id        TEXT,
	user_id          TEXT    NOT NULL,
	schedule         TEXT    NOT NULL,
	timezone         TEXT    NOT NULL,
	payload          BLOB    NOT NULL,
	metadata         BLOB    NOT NULL,
	next_run_at      INTEGER,
	end_time         INTEGER,
	enabled          INTEGER NOT NULL,
	on_run_completed TEXT    NOT NULL,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	PRIMARY KEY (tenant, cron_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX trellis_crons_thread ON trellis_crons (tenant, thread_id);
CREATE INDEX trellis_crons_due ON trellis_crons (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;
`}, {Version: 5, SQL: `
-- The assistant version a run names (NULL: the assistant's latest version
-- when it runs).
ALTER TABLE trellis_runs ADD COLUMN assistant_version INTEGER;
`}, {Version: 6, SQL: `
-- A run's lease lives on its row (lease_token was already there): its
-- owner and expiry (Unix microseconds), both NULL when no lease holds the
-- run. The accept's pre-claim, the claim, the finish and a take-over
-- each write the row their statement already writes, and a fenced write
-- compares lease_token on the row it updates. The expiry's index holds
-- only the rows that hold a lease.
ALTER TABLE trellis_runs ADD COLUMN lease_owner TEXT;
ALTER TABLE trellis_runs ADD COLUMN lease_expires_at INTEGER;
UPDATE trellis_runs SET (lease_owner, lease_expires_at, lease_token) =
	(SELECT l.owner, l.expires_at, l.token FROM trellis_leases l WHERE l.tenant = trellis_runs.tenant AND l.run_id = trellis_runs.run_id)
WHERE EXISTS (SELECT 1 FROM trellis_leases l WHERE l.tenant = trellis_runs.tenant AND l.run_id = trellis_runs.run_id);
DROP TABLE trellis_leases;
CREATE INDEX trellis_runs_lease_expiry ON trellis_runs (lease_expires_at, tenant, run_id) WHERE lease_expires_at IS NOT NULL;
`}}

// DB is the store of record on a SQLite file. It is safe for concurrent
// use, also by several processes sharing the file. Create one with Open.
type DB struct {
	sq *sqlitedb.DB
	// Store is every store of db.DB, written once over this dialect's
	// queries (queries/*.sql) and driver (driver.go), with export and
	// import (db.Exporter) and the transaction folds (db.TxRunCreator,
	// db.TxClaimer).
	*sqlcore.Store
}

var _ db.DB = (*DB)(nil)

// Open opens (creating when missing) the SQLite database at path, with its
// directory, and brings the service's tables up to date. A "sqlite://" or
// "file:" prefix is accepted and removed. It fails with an error wrapping
// sqlitedb.ErrNewerSchema when a newer Trellis migrated the file.
func Open(ctx context.Context, path string) (*DB, error) {
	p := strings.TrimPrefix(strings.TrimPrefix(path, "sqlite://"), "file:")
	if p == "" {
		return nil, errors.New("server/db/sqlite: the database path is empty; pass a file path such as .trellis/trellis.db")
	}
	sq, err := sqlitedb.Open(ctx, p, Component, migrations)
	if err != nil {
		return nil, fmt.Errorf("server/db/sqlite: %w", err)
	}
	if err := sq.Migrate(ctx, KeysComponent, keyMigrations); err != nil {
		sq.Close()
		return nil, fmt.Errorf("server/db/sqlite: %w", err)
	}
	if err := sq.Migrate(ctx, EvalComponent, evalMigrations); err != nil {
		sq.Close()
		return nil, fmt.Errorf("server/db/sqlite: %w", err)
	}
	d := &DB{sq: sq}
	if d.Store, err = newCore(d); err != nil {
		sq.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the database file's pools. The DB must not be used
// afterwards.
func (d *DB) Close() error { return d.sq.Close() }

// Ping checks that the file can be read.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.sq.Ping(ctx); err != nil {
		return fmt.Errorf("server/db/sqlite: ping %s: %w", d.sq.Path(), err)
	}
	var n int
	if err := d.sq.Read.QueryRowContext(ctx, `SELECT count(*) FROM trellis_threads WHERE 0`).Scan(&n); err != nil {
		return fmt.Errorf("server/db/sqlite: ping %s: %w", d.sq.Path(), err)
	}
	return nil
}

// write runs fn in a write transaction (BEGIN IMMEDIATE), committing when
// it returns nil. A storage failure (a full disk, an I/O error) comes back
// as a *db.StorageError naming the file.
func (d *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.sq.Write.BeginTx(ctx, nil)
	if err != nil {
		return classify(fmt.Errorf("server/db/sqlite: begin: %w", err), d.sq.Path())
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return classify(err, d.sq.Path())
	}
	if err := tx.Commit(); err != nil {
		return classify(fmt.Errorf("server/db/sqlite: commit: %w", err), d.sq.Path())
	}
	d.sq.Committed()
	return nil
}

// read runs fn in a read transaction: one snapshot for its statements.
func (d *DB) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.sq.Read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify(fmt.Errorf("server/db/sqlite: begin: %w", err), d.sq.Path())
	}
	defer func() { _ = tx.Rollback() }()
	return classify(fn(tx), d.sq.Path())
}

// micros converts a time to the stored Unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts stored Unix microseconds to a UTC time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// isUnique reports a UNIQUE or PRIMARY KEY constraint failure.
func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
