// Package postgres is the service's store of record (db.DB) on
// PostgreSQL, for services that several replicas share. Its tables, all
// prefixed trellis_, live in one schema (see WithSchema), next to the
// checkpoint saver's, the store's and River's if wanted; migrations are
// versioned and applied under an advisory lock (internal/pgdb), so
// replicas starting at once migrate once.
//
// Every table has the tenant first in its primary key and in every index.
// At most one run per (tenant, thread) is running: a partial unique index
// on trellis_runs (tenant, thread_id) WHERE status = 'running' enforces
// it, so two replicas claiming two runs of one thread at once cannot both
// win (the loser gets db.ErrBusy).
//
// Metadata and thread values are jsonb and searched with @> (containment:
// nested objects, arrays, numbers by value), inside SQL, so paging and
// counting run in the database. Event data is stored as bytes exactly as
// given. Text columns use the "C" collation, so sorting by a text column
// orders as SQLite and Go do; the case-insensitive name search lowers
// non-ASCII letters as the database's locale does.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/sqlcore"
)

// Component is the name under which the tables' migrations are recorded
// in the schema's schema_migrations table.
const Component = "server"

// migrations are the versions of the tables; see pgdb.Migrate. Never edit
// a released one: append.
var migrations = []string{
	// 1: the initial tables.
	`
CREATE TABLE trellis_assistants (
	tenant       text COLLATE "C" NOT NULL,
	assistant_id text COLLATE "C" NOT NULL,
	graph_id     text COLLATE "C" NOT NULL,
	name         text COLLATE "C" NOT NULL,
	description  text             NOT NULL,
	config       jsonb            NOT NULL,
	context      jsonb            NOT NULL,
	metadata     jsonb            NOT NULL,
	version      integer          NOT NULL,
	created_at   timestamptz      NOT NULL,
	updated_at   timestamptz      NOT NULL,
	PRIMARY KEY (tenant, assistant_id)
);
CREATE INDEX trellis_assistants_graph ON trellis_assistants (tenant, graph_id);

CREATE TABLE trellis_assistant_versions (
	tenant       text COLLATE "C" NOT NULL,
	assistant_id text COLLATE "C" NOT NULL,
	version      integer          NOT NULL,
	graph_id     text COLLATE "C" NOT NULL,
	name         text COLLATE "C" NOT NULL,
	description  text             NOT NULL,
	config       jsonb            NOT NULL,
	context      jsonb            NOT NULL,
	metadata     jsonb            NOT NULL,
	created_at   timestamptz      NOT NULL,
	PRIMARY KEY (tenant, assistant_id, version),
	FOREIGN KEY (tenant, assistant_id) REFERENCES trellis_assistants (tenant, assistant_id) ON DELETE CASCADE
);

CREATE TABLE trellis_threads (
	tenant        text COLLATE "C" NOT NULL,
	thread_id     text COLLATE "C" NOT NULL,
	status        text COLLATE "C" NOT NULL,
	metadata      jsonb            NOT NULL,
	thread_values jsonb,
	interrupts    jsonb            NOT NULL,
	error         text             NOT NULL,
	created_at    timestamptz      NOT NULL,
	updated_at    timestamptz      NOT NULL,
	PRIMARY KEY (tenant, thread_id)
);
CREATE INDEX trellis_threads_status ON trellis_threads (tenant, status);

-- seq orders runs by creation; lease_token is the last lease token given,
-- event_seq the last event Seq.
CREATE TABLE trellis_runs (
	tenant             text COLLATE "C" NOT NULL,
	run_id             text COLLATE "C" NOT NULL,
	thread_id          text COLLATE "C" NOT NULL,
	assistant_id       text COLLATE "C" NOT NULL,
	status             text COLLATE "C" NOT NULL,
	metadata           jsonb            NOT NULL,
	kwargs             jsonb            NOT NULL,
	multitask_strategy text             NOT NULL,
	usage              jsonb,
	error              text             NOT NULL,
	created_at         timestamptz      NOT NULL,
	updated_at         timestamptz      NOT NULL,
	ended_at           timestamptz,
	not_before         timestamptz,
	cancel_requested   text             NOT NULL,
	seq                bigint GENERATED ALWAYS AS IDENTITY,
	lease_token        bigint           NOT NULL,
	event_seq          bigint           NOT NULL,
	PRIMARY KEY (tenant, run_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
);
CREATE INDEX trellis_runs_thread ON trellis_runs (tenant, thread_id, seq);
CREATE UNIQUE INDEX trellis_runs_one_running ON trellis_runs (tenant, thread_id) WHERE status = 'running';
CREATE INDEX trellis_runs_ended ON trellis_runs (ended_at, tenant) WHERE ended_at IS NOT NULL;

CREATE TABLE trellis_run_events (
	tenant     text COLLATE "C" NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	seq        bigint           NOT NULL,
	event      text             NOT NULL,
	data       bytea            NOT NULL,
	created_at timestamptz      NOT NULL,
	PRIMARY KEY (tenant, run_id, seq),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
);

CREATE TABLE trellis_leases (
	tenant     text COLLATE "C" NOT NULL,
	run_id     text COLLATE "C" NOT NULL,
	thread_id  text COLLATE "C" NOT NULL,
	owner      text             NOT NULL,
	token      bigint           NOT NULL,
	expires_at timestamptz      NOT NULL,
	PRIMARY KEY (tenant, run_id),
	FOREIGN KEY (tenant, run_id) REFERENCES trellis_runs (tenant, run_id) ON DELETE CASCADE
);
CREATE INDEX trellis_leases_expiry ON trellis_leases (expires_at, tenant);
`,
	// 2: metadata patched over saved checkpoints (PATCH /threads/{id}/state).
	`
CREATE TABLE trellis_checkpoint_metadata (
	tenant        text COLLATE "C" NOT NULL,
	thread_id     text COLLATE "C" NOT NULL,
	checkpoint_id text COLLATE "C" NOT NULL,
	metadata      jsonb            NOT NULL,
	updated_at    timestamptz      NOT NULL,
	PRIMARY KEY (tenant, thread_id, checkpoint_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
);
`,
	// 3: threads' TTL (microseconds; NULL: none), its strategy, and when
	// the thread expires (NULL: never), moved on by every activity.
	`
ALTER TABLE trellis_threads ADD COLUMN ttl_us bigint;
ALTER TABLE trellis_threads ADD COLUMN ttl_strategy text NOT NULL DEFAULT '';
ALTER TABLE trellis_threads ADD COLUMN expires_at timestamptz;
CREATE INDEX trellis_threads_expiry ON trellis_threads (expires_at) WHERE expires_at IS NOT NULL;
`,
	// 4: scheduled runs. next_run_at is the next slot (NULL: none left);
	// firing a slot moves it with a compare-and-set, so a slot fires at
	// most once. A thread cron goes with its thread.
	`
CREATE TABLE trellis_crons (
	tenant           text COLLATE "C" NOT NULL,
	cron_id          text COLLATE "C" NOT NULL,
	assistant_id     text COLLATE "C" NOT NULL,
	thread_id        text COLLATE "C",
	user_id          text             NOT NULL,
	schedule         text             NOT NULL,
	timezone         text             NOT NULL,
	payload          jsonb            NOT NULL,
	metadata         jsonb            NOT NULL,
	next_run_at      timestamptz,
	end_time         timestamptz,
	enabled          boolean          NOT NULL,
	on_run_completed text             NOT NULL,
	created_at       timestamptz      NOT NULL,
	updated_at       timestamptz      NOT NULL,
	PRIMARY KEY (tenant, cron_id),
	FOREIGN KEY (tenant, thread_id) REFERENCES trellis_threads (tenant, thread_id) ON DELETE CASCADE
);
CREATE INDEX trellis_crons_thread ON trellis_crons (tenant, thread_id);
CREATE INDEX trellis_crons_due ON trellis_crons (next_run_at) WHERE enabled AND next_run_at IS NOT NULL;
`,
	// 5: the assistant version a run names (NULL: the assistant's latest
	// version when it runs).
	`ALTER TABLE trellis_runs ADD COLUMN assistant_version integer;`,
	// 6: no secondary index leads with tenant. A lookup by primary key
	// (tenant, id) could otherwise be planned on a secondary index whose
	// only usable condition is tenant, filtering the id row by row: with
	// one tenant, a walk over every row of the table. The planner picks
	// it when both estimates are one row (a table never analyzed, or a
	// generic plan cached while the table was small), and it kept that
	// plan for the whole life of a connection: a run's lookups grew with
	// the table (docs/architecture.md, "What PostgreSQL spends per run").
	// The same columns in another order serve the same equality lookups.
	`
DROP INDEX trellis_runs_thread;
CREATE INDEX trellis_runs_thread ON trellis_runs (thread_id, tenant, seq);
DROP INDEX trellis_threads_status;
CREATE INDEX trellis_threads_status ON trellis_threads (status, tenant);
DROP INDEX trellis_assistants_graph;
CREATE INDEX trellis_assistants_graph ON trellis_assistants (graph_id, tenant);
DROP INDEX trellis_crons_thread;
CREATE INDEX trellis_crons_thread ON trellis_crons (thread_id, tenant);
`,
	// 7: no index on a thread's status. Every run sets its thread's
	// status twice (busy, then idle or interrupted); with the column
	// indexed neither update could be a heap-only (HOT) one, and the
	// generic plan of the finish's FreeThread (... AND status = 'busy')
	// scanned this index for every busy thread of the tenant, filtering
	// thread_id. Only the thread search's status filter read it, and a
	// status is shared by most of a tenant's threads: the search reads
	// the tenant's threads either way (docs/architecture.md, "Generic
	// plans on PostgreSQL").
	`DROP INDEX trellis_threads_status;`,
	// 8: a run's lease lives on its row (lease_token was already there):
	// its owner and expiry, both NULL when no lease holds the run. The
	// accept's pre-claim, the claim, the finish and a take-over each
	// write the row their statement already writes, and a fenced write
	// compares lease_token on the row it updates: no second table, no
	// second row lock. The expiry's index is partial (only the rows that
	// hold a lease, a few per replica) and its columns change only with
	// the claim, a renewal, a take-over or the finish: the claim and the
	// finish change status and ended_at, indexed already, so none of them
	// loses a heap-only (HOT) update it had; a renewal (a heartbeat every
	// third of the TTL) is not HOT, as it was not on trellis_leases
	// (docs/architecture.md, "The run's lease lives on its row").
	`
ALTER TABLE trellis_runs ADD COLUMN lease_owner text;
ALTER TABLE trellis_runs ADD COLUMN lease_expires_at timestamptz;
UPDATE trellis_runs r SET lease_owner = l.owner, lease_expires_at = l.expires_at, lease_token = l.token
FROM trellis_leases l WHERE l.tenant = r.tenant AND l.run_id = r.run_id;
DROP TABLE trellis_leases;
CREATE INDEX trellis_runs_lease_expiry ON trellis_runs (lease_expires_at, tenant, run_id) WHERE lease_expires_at IS NOT NULL;
`,
}

// DB is the store of record on PostgreSQL. It is safe for concurrent use,
// also by several processes sharing one database.
type DB struct {
	pool  *pgxpool.Pool
	owned bool // Close closes the pool
	// Store is every store of db.DB, written once over this dialect's
	// queries (queries/*.sql) and driver (driver.go), with export and
	// import (db.Exporter) and the transaction folds (db.TxRunCreator,
	// db.TxClaimer).
	*sqlcore.Store
}

var _ db.DB = (*DB)(nil)

// Option configures Open.
type Option func(*options)

type options struct {
	schema string
}

// WithSchema makes Open keep the tables in the named schema, created when
// missing, instead of the connection's default (usually "public").
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Open connects to the database dsn names (a postgres:// URL or key=value
// string), creates or upgrades the tables, and returns a DB that owns its
// pool. It refuses a schema migrated by a newer Trellis (the error wraps
// pgdb.ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	pool, err := pgdb.Connect(ctx, dsn, o.schema)
	if err != nil {
		return nil, fmt.Errorf("server/db/postgres: open: %w; check the URL and that the server is running", err)
	}
	d, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	d.owned = true
	return d, nil
}

// New returns a DB on an existing pool, whose connections' search_path
// selects the schema of the tables; it creates or upgrades them as Open
// does. Close leaves the pool open.
func New(ctx context.Context, pool *pgxpool.Pool) (*DB, error) {
	if err := pgdb.Migrate(ctx, pool, Component, migrations); err != nil {
		return nil, fmt.Errorf("server/db/postgres: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, KeysComponent, keyMigrations); err != nil {
		return nil, fmt.Errorf("server/db/postgres: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, EvalComponent, evalMigrations); err != nil {
		return nil, fmt.Errorf("server/db/postgres: %w", err)
	}
	d := &DB{pool: pool}
	var err error
	if d.Store, err = newCore(d); err != nil {
		return nil, err
	}
	return d, nil
}

// Close releases the pool when Open created it. The DB must not be used
// afterwards.
func (d *DB) Close() error {
	if d.owned {
		d.pool.Close()
	}
	return nil
}

// Ping checks that the database answers and the tables are there.
func (d *DB) Ping(ctx context.Context) error {
	var n int
	if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_threads WHERE false`).Scan(&n); err != nil {
		return classify(fmt.Errorf("server/db/postgres: ping: %w", err))
	}
	return nil
}

// commitTimeout bounds a COMMIT, which runs without the caller's context
// so that a canceled context cannot leave the outcome unknown.
const commitTimeout = 30 * time.Second

var (
	readWrite = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	readOnly  = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
)

// inTx runs fn in a transaction, committing when it returns nil. A
// storage failure (a full disk, an I/O error, no connection) comes back
// as a *db.StorageError.
//
// The transaction is a pgdb.Tx: its BEGIN goes with its first statement,
// and the writes whose results nobody reads go with the next statement or
// the COMMIT.
func (d *DB) inTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	tx, err := pgdb.Begin(ctx, d.pool, opts)
	if err != nil {
		return classify(fmt.Errorf("server/db/postgres: begin: %w", err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return classify(err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return classify(fmt.Errorf("server/db/postgres: commit: %w", err))
	}
	return nil
}

func (d *DB) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.inTx(ctx, readWrite, fn)
}
func (d *DB) read(ctx context.Context, fn func(pgx.Tx) error) error { return d.inTx(ctx, readOnly, fn) }

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// isUnique reports a unique violation, optionally of a named constraint.
func isUnique(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}
