package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-agents/trellis/checkpoint"
	ckpg "github.com/trellis-agents/trellis/checkpoint/postgres"
	cksqlite "github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	dbpg "github.com/trellis-agents/trellis/server/db/postgres"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/store"
	stpg "github.com/trellis-agents/trellis/store/postgres"
	stsqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// DefaultDatabase is the database of a Config that names none: one SQLite
// file under ./.trellis/.
var DefaultDatabase = filepath.Join(".trellis", "trellis.db")

// storage is everything the server keeps data in: the store of record,
// the saver, the store and River's connection, on one backend.
type storage struct {
	kind   string // "sqlite" or "postgres"
	where  string // the file, or the URL without its password, for logs
	file   string // the SQLite file ("" on PostgreSQL)
	db     db.DB
	saver  checkpoint.Saver
	store  store.Store
	river  *sql.DB        // SQLite: River's one-connection write pool
	read   *sql.DB        // SQLite: a read pool (the queue depth gauge)
	pool   *pgxpool.Pool  // PostgreSQL: the pool everything shares
	closes []func() error // in opening order; close runs them backwards
}

// parseDatabase says which backend a --database value names: "postgres"
// with the URL, or "sqlite" with the file path. A value that is neither a
// path nor a known URL is an error saying what is accepted.
func parseDatabase(v string) (kind, target string, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "sqlite", DefaultDatabase, nil
	}
	i := strings.Index(v, "://")
	if i < 0 {
		return "sqlite", v, nil
	}
	switch scheme := strings.ToLower(v[:i]); scheme {
	case "postgres", "postgresql":
		return "postgres", v, nil
	case "sqlite", "file":
		path := v[i+3:]
		if j := strings.IndexAny(path, "?#"); j >= 0 {
			path = path[:j]
		}
		if path == "" {
			return "", "", fmt.Errorf("database %q names no file; write sqlite://PATH (sqlite:///abs/path for an absolute one)", v)
		}
		return "sqlite", path, nil
	default:
		return "", "", fmt.Errorf("database %q: scheme %q is not supported; give a file path, sqlite://PATH or postgres://USER@HOST/DB", v, scheme)
	}
}

// DefaultPoolConns is the most connections a replica opens to PostgreSQL
// when the database URL sets no pool_max_conns. With pgx's own default,
// max(4, CPUs), a busy replica's runs queue for connections: 50 clients
// of the planner on one 2-core replica ran 15-20 % more runs/s with 16
// (bench/README.md).
const DefaultPoolConns = 16

// withPoolSize returns the PostgreSQL URL u with pool_max_conns set to
// DefaultPoolConns unless it sets one; a URL that does not parse is
// returned as it is (the driver reports it).
func withPoolSize(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := parsed.Query()
	if q.Has("pool_max_conns") {
		return u
	}
	q.Set("pool_max_conns", strconv.Itoa(DefaultPoolConns))
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// openStorage opens (creating or migrating) the backend database names.
// index, when set, makes the store embed items and answer semantic
// searches.
func openStorage(ctx context.Context, database string, index *store.IndexConfig) (_ *storage, err error) {
	kind, target, err := parseDatabase(database)
	if err != nil {
		return nil, err
	}
	s := &storage{kind: kind}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if kind == "postgres" {
		s.where = redact(target)
		if s.pool, err = pgdb.Connect(ctx, withPoolSize(target), ""); err != nil {
			return nil, fmt.Errorf("database %s: %w; check the URL and that the server is running", s.where, err)
		}
		pool := s.pool
		s.closes = append(s.closes, func() error { pool.Close(); return nil })
		// Every migration set (the service's tables, checkpoints, store,
		// River's jobs) runs under one advisory lock on the schema, so
		// replicas starting together and `trellis migrate` take turns as a
		// whole; each set also keeps its own lock for library users.
		unlock, err := lockMigrations(ctx, pool)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", s.where, err)
		}
		defer unlock()
		d, err := dbpg.New(ctx, pool)
		if err != nil {
			return nil, err
		}
		s.db = d
		saver, err := ckpg.New(ctx, pool)
		if err != nil {
			return nil, err
		}
		s.saver = saver
		var stOpts []stpg.Option
		if index != nil {
			stOpts = append(stOpts, stpg.WithIndex(*index))
		}
		st, err := stpg.New(ctx, pool, stOpts...)
		if err != nil {
			return nil, err
		}
		s.store = st
		if err := queue.Migrate(ctx, queue.Config{Postgres: pool, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.file, s.where = target, target
	d, err := dbsqlite.Open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", target, err)
	}
	s.db = d
	s.closes = append(s.closes, d.Close)
	saver, err := cksqlite.Open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", target, err)
	}
	s.saver = saver
	s.closes = append(s.closes, saver.Close)
	var stOpts []stsqlite.Option
	if index != nil {
		stOpts = append(stOpts, stsqlite.WithIndex(*index))
	}
	st, err := stsqlite.Open(ctx, target, stOpts...)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", target, err)
	}
	s.store = st
	s.closes = append(s.closes, st.Close)
	rdb, err := sqlitedb.Open(ctx, target, "river_host", nil)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", target, err)
	}
	s.river, s.read = rdb.Write, rdb.Read
	s.closes = append(s.closes, rdb.Close)
	return s, nil
}

// close closes what openStorage opened, last first, and joins the errors.
func (s *storage) close() error {
	var errs []error
	for i := len(s.closes) - 1; i >= 0; i-- {
		errs = append(errs, s.closes[i]())
	}
	s.closes = nil
	return errors.Join(errs...)
}

// redact drops the password from a URL for logs.
func redact(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 {
		return u
	}
	userinfo := u[scheme+3 : at]
	if c := strings.Index(userinfo, ":"); c >= 0 {
		return u[:scheme+3] + userinfo[:c] + ":***" + u[at:]
	}
	return u
}

// lockMigrations takes the advisory lock under which every migration of
// the pool's schema runs, on a connection of its own (not the pool's, so a
// pool of one connection cannot deadlock), and returns its release.
func lockMigrations(ctx context.Context, pool *pgxpool.Pool) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect for the migration lock: %w", err)
	}
	const key = `hashtextextended('trellis/migrate/' || coalesce(current_schema(), ''), 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	return func() {
		bg := context.WithoutCancel(ctx)
		_, _ = conn.Exec(bg, `SELECT pg_advisory_unlock(`+key+`)`)
		_ = conn.Close(bg) // closing ends the session, which releases the lock anyway
	}, nil
}

// Migrate brings the database at database (as Config.Database) to this
// version's schema — the service's tables, the checkpoints, the store and
// River's jobs — and returns without serving: `trellis migrate`. Serving
// migrates on start as well; on PostgreSQL every step runs under one
// advisory lock on the schema, so replicas starting together and this
// command take turns.
func Migrate(ctx context.Context, database string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	st, err := openStorage(ctx, database, nil)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	err = queue.Migrate(ctx, queue.Config{SQLite: st.river, Postgres: st.pool, Logger: slog.New(atLeast{log.Handler(), slog.LevelWarn})})
	return errors.Join(err, st.close())
}
