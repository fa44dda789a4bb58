// Package pgdb holds what Trellis's PostgreSQL backends share: opening a
// connection pool bound to a schema, and applying each backend's versioned
// migrations exactly once, even when several processes start at the same
// time.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// MaxIdentifierLen is the longest identifier PostgreSQL keeps; longer names
// are silently truncated by the server, so Connect rejects them.
const MaxIdentifierLen = 63

// PlanCacheMode is the plan_cache_mode of the connections Connect opens
// when the connection string sets none. pgx prepares every statement once
// per connection; with PostgreSQL's default ("auto") a statement whose
// custom plans look cheaper than its generic one is planned again at every
// execution, and the run path's reads and River's insert all are: their
// planning was about a quarter of PostgreSQL's CPU per run. The run path's
// statements are lookups by key or scans of an index whose leading columns
// they compare for equality (no secondary index leads with tenant), which a
// generic plan serves as well as a custom one (docs/architecture.md,
// "Generic plans on PostgreSQL").
const PlanCacheMode = "force_generic_plan"

// ErrSchemaTooNew means the database was migrated by a newer version of
// Trellis than the running one: its schema has migrations this code does
// not know, so using it could corrupt data.
var ErrSchemaTooNew = errors.New("pgdb: the database schema is newer than this version of trellis")

// Connect opens a connection pool for dsn (a postgres:// URL or a key=value
// connection string). When schema is not "", every connection of the pool
// uses it as its only search_path, and the schema is created when missing.
// Every connection plans its prepared statements once (PlanCacheMode)
// unless dsn sets plan_cache_mode. The caller closes the pool.
func Connect(ctx context.Context, dsn, schema string) (*pgxpool.Pool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgdb: parse connection string: %w", err)
	}
	if schema != "" {
		if err := ValidateIdentifier(schema); err != nil {
			return nil, fmt.Errorf("pgdb: schema: %w", err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = PlanCacheMode
	}
	if sqltrace.Active() && cfg.ConnConfig.Tracer == nil {
		cfg.ConnConfig.Tracer = tracer{}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgdb: open pool: %w", err)
	}
	if schema != "" {
		if err := createSchema(ctx, pool, schema); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return pool, nil
}

// ValidateIdentifier reports a name PostgreSQL would not keep as given:
// empty, longer than MaxIdentifierLen bytes, or holding a NUL byte.
func ValidateIdentifier(name string) error {
	switch {
	case name == "":
		return errors.New("name is empty")
	case len(name) > MaxIdentifierLen:
		return fmt.Errorf("name %q is %d bytes long; PostgreSQL keeps at most %d", name, len(name), MaxIdentifierLen)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("name %q holds a NUL byte", name)
	}
	return nil
}

// createSchema creates schema unless it exists. The check comes first so
// that a role without the CREATE privilege can use an existing schema; the
// advisory lock keeps two processes from racing on CREATE SCHEMA, which
// fails with a unique violation rather than honouring IF NOT EXISTS.
func createSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("pgdb: look up schema %q: %w", schema, err)
	}
	if exists {
		return nil
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('trellis/pgdb/create-schema', 0))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
		return err
	})
	if err != nil {
		return fmt.Errorf("pgdb: create schema %q: %w", schema, err)
	}
	return nil
}

// Migrate brings component's tables in the pool's current schema up to
// date. migrations[i] is the SQL of version i+1 (it may hold several
// statements); versions are never renumbered or edited once released, new
// ones are appended.
//
// The versions applied are recorded in table schema_migrations(component,
// version, applied_at). Each migration runs in its own transaction, which
// holds an advisory lock on the schema, so two processes starting at once
// apply it once. Calling Migrate again is cheap and changes nothing. A
// database whose component is at a version above len(migrations) is
// refused with an error wrapping ErrSchemaTooNew.
func Migrate(ctx context.Context, pool *pgxpool.Pool, component string, migrations []string) error {
	if component == "" {
		return errors.New("pgdb: migrate: component name is empty")
	}
	for {
		done, err := migrateOne(ctx, pool, component, migrations)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next migration of component in one transaction.
// It reports done when the schema was already up to date.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, component string, migrations []string) (done bool, err error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: %w", component, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: %w", component, err)
	}
	if schema == nil {
		return false, fmt.Errorf("pgdb: migrate %s: no schema is selected: the search_path names no existing schema", component)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('trellis/pgdb/migrate/' || current_schema(), 0))`); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: lock schema %q: %w", component, *schema, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  text        NOT NULL,
	version    integer     NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (component, version)
)`); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: create schema_migrations in schema %q: %w", component, *schema, err)
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations WHERE component = $1`, component).Scan(&current); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: read version: %w", component, err)
	}
	switch {
	case current > len(migrations):
		return false, fmt.Errorf("pgdb: %s tables in schema %q are at version %d, but this code knows versions up to %d; upgrade trellis or use another schema: %w",
			component, *schema, current, len(migrations), ErrSchemaTooNew)
	case current == len(migrations):
		return true, tx.Commit(ctx)
	}
	next := current + 1
	if _, err := tx.Exec(ctx, migrations[current]); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s to version %d in schema %q: %w", component, next, *schema, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (component, version) VALUES ($1, $2)`, component, next); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: record version %d: %w", component, next, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("pgdb: migrate %s: commit version %d: %w", component, next, err)
	}
	return false, nil
}
