package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

// migrations create the schedule's tables. Version 2 scopes every table
// (a scope column in each key and each query) so that threads sharing a
// database keep separate calendars; it replaces version 1's unscoped
// tables, which held only the demo's sample week.
var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE sched_window (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	days      INTEGER NOT NULL CHECK (days > 0),
	slots     INTEGER NOT NULL CHECK (slots > 0),
	day_names TEXT NOT NULL
);
CREATE TABLE sched_items (
	id        INTEGER PRIMARY KEY,
	title     TEXT NOT NULL,
	kind      TEXT NOT NULL CHECK (kind IN ('event', 'task')),
	category  TEXT NOT NULL DEFAULT '',
	duration  INTEGER NOT NULL CHECK (duration > 0),
	day       INTEGER NOT NULL DEFAULT 0,
	start     INTEGER NOT NULL DEFAULT 0,
	locked    INTEGER NOT NULL DEFAULT 0,
	can_embed INTEGER NOT NULL DEFAULT 0,
	host      INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE sched_changes (
	seq     INTEGER PRIMARY KEY AUTOINCREMENT,
	at      TEXT NOT NULL,
	call_id TEXT NOT NULL,
	tool    TEXT NOT NULL,
	item    INTEGER NOT NULL,
	before  TEXT NOT NULL,
	after   TEXT NOT NULL
);
CREATE TABLE sched_applied (
	call_id TEXT PRIMARY KEY,
	tool    TEXT NOT NULL,
	result  TEXT NOT NULL
);
`}, {Version: 2, SQL: `
DROP TABLE IF EXISTS sched_window;
DROP TABLE IF EXISTS sched_items;
DROP TABLE IF EXISTS sched_changes;
DROP TABLE IF EXISTS sched_applied;
CREATE TABLE sched_window (
	scope     TEXT PRIMARY KEY,
	days      INTEGER NOT NULL CHECK (days > 0),
	slots     INTEGER NOT NULL CHECK (slots > 0),
	day_names TEXT NOT NULL
);
CREATE TABLE sched_items (
	scope     TEXT NOT NULL,
	id        INTEGER NOT NULL,
	title     TEXT NOT NULL,
	kind      TEXT NOT NULL CHECK (kind IN ('event', 'task')),
	category  TEXT NOT NULL DEFAULT '',
	duration  INTEGER NOT NULL CHECK (duration > 0),
	day       INTEGER NOT NULL DEFAULT 0,
	start     INTEGER NOT NULL DEFAULT 0,
	locked    INTEGER NOT NULL DEFAULT 0,
	can_embed INTEGER NOT NULL DEFAULT 0,
	host      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (scope, id)
);
CREATE TABLE sched_changes (
	seq     INTEGER PRIMARY KEY AUTOINCREMENT,
	scope   TEXT NOT NULL,
	at      TEXT NOT NULL,
	call_id TEXT NOT NULL,
	tool    TEXT NOT NULL,
	item    INTEGER NOT NULL,
	before  TEXT NOT NULL,
	after   TEXT NOT NULL
);
CREATE INDEX sched_changes_scope ON sched_changes (scope, seq);
CREATE TABLE sched_applied (
	scope   TEXT NOT NULL,
	call_id TEXT NOT NULL,
	tool    TEXT NOT NULL,
	result  TEXT NOT NULL,
	PRIMARY KEY (scope, call_id)
);
`}}

// pgMigrations are the same tables in PostgreSQL (component "scheduler"
// in schema_migrations, applied once by pgdb.Migrate).
var pgMigrations = []string{`
CREATE TABLE sched_window (
	scope     text PRIMARY KEY,
	days      integer NOT NULL CHECK (days > 0),
	slots     integer NOT NULL CHECK (slots > 0),
	day_names text NOT NULL
);
CREATE TABLE sched_items (
	scope     text NOT NULL,
	id        integer NOT NULL,
	title     text NOT NULL,
	kind      text NOT NULL CHECK (kind IN ('event', 'task')),
	category  text NOT NULL DEFAULT '',
	duration  integer NOT NULL CHECK (duration > 0),
	day       integer NOT NULL DEFAULT 0,
	start     integer NOT NULL DEFAULT 0,
	locked    boolean NOT NULL DEFAULT false,
	can_embed boolean NOT NULL DEFAULT false,
	host      integer NOT NULL DEFAULT 0,
	PRIMARY KEY (scope, id)
);
CREATE TABLE sched_changes (
	seq     bigserial PRIMARY KEY,
	scope   text NOT NULL,
	at      text NOT NULL,
	call_id text NOT NULL,
	tool    text NOT NULL,
	item    integer NOT NULL,
	before  text NOT NULL,
	after   text NOT NULL
);
CREATE INDEX sched_changes_scope ON sched_changes (scope, seq);
CREATE TABLE sched_applied (
	scope   text NOT NULL,
	call_id text NOT NULL,
	tool    text NOT NULL,
	result  text NOT NULL,
	PRIMARY KEY (scope, call_id)
);
`}

// classMigrations add the task classes, under their own component key
// ("scheduler_classes"), so the schedule's versioned list is not
// renumbered. pgClassMigrations are the same in PostgreSQL.
var classMigrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE sched_classes (
	scope TEXT NOT NULL,
	name  TEXT NOT NULL,
	class TEXT NOT NULL, -- the Class as JSON
	PRIMARY KEY (scope, name)
);
`}}

var pgClassMigrations = []string{`
CREATE TABLE sched_classes (
	scope text NOT NULL,
	name  text NOT NULL,
	class text NOT NULL,
	PRIMARY KEY (scope, name)
);
`}

// scopeTables are every table holding a scope's rows.
var scopeTables = []string{"sched_window", "sched_items", "sched_changes", "sched_applied", "sched_classes"}

// Store keeps schedules in SQLite or PostgreSQL, one per scope (a thread, or whatever the
// caller scopes by): every method takes the scope, and every table and
// query is keyed on it, so scopes sharing a database never see each other's
// rows. Writes go through Apply, which runs an operation on the scope's
// current schedule and saves its diff, the change log and the call's result
// in one transaction. The tables are prefixed sched_ and can live in the
// same file as the checkpoints and the store.
type Store struct {
	read, write *sql.DB
	pg          bool   // PostgreSQL: $n placeholders, row locks
	committed   func() // after each write transaction (SQLite's WAL checkpointer)
	close       func() error
}

// Open opens (creating if needed) the schedule database at path, a SQLite
// file.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, "scheduler", migrations)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if err := db.Migrate(ctx, "scheduler_classes", classMigrations); err != nil {
		db.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return &Store{read: db.Read, write: db.Write, committed: db.Committed, close: db.Close}, nil
}

// OpenPostgres opens the schedules in a PostgreSQL database (dsn, a
// postgres:// URL), in schema when it is not "" (created when missing),
// migrating the sched_ tables (idempotently: a second process starting at
// once applies nothing twice). The tables may share a database with the
// service's checkpoints and store.
func OpenPostgres(ctx context.Context, dsn, schema string) (*Store, error) {
	pool, err := pgdb.Connect(ctx, dsn, schema)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, "scheduler", pgMigrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if err := pgdb.Migrate(ctx, pool, "scheduler_classes", pgClassMigrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	return &Store{read: db, write: db, pg: true, committed: func() {}, close: func() error {
		err := db.Close()
		pool.Close()
		return err
	}}, nil
}

// OpenSource opens source: a postgres:// or postgresql:// URL with
// OpenPostgres (in schema), anything else as a SQLite file with Open.
func OpenSource(ctx context.Context, source, schema string) (*Store, error) {
	if strings.HasPrefix(source, "postgres://") || strings.HasPrefix(source, "postgresql://") {
		return OpenPostgres(ctx, source, schema)
	}
	return Open(ctx, source)
}

// Close closes the database.
func (s *Store) Close() error { return s.close() }

// q adapts a query written with ? placeholders to the database.
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// ErrNoSchedule is returned by Load for a scope that holds no schedule.
var ErrNoSchedule = errors.New("scheduler: this scope holds no schedule yet; seed it first (Store.Seed)")

func checkScope(scope string) error {
	if scope == "" {
		return errors.New("scheduler: the data scope is empty; run with apps.WithScope(ctx, thread) or set Config.Scope")
	}
	return nil
}

// Load reads the scope's schedule. A scope never seeded is ErrNoSchedule.
func (s *Store) Load(ctx context.Context, scope string) (*Schedule, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	return s.load(ctx, s.read, scope)
}

func (s *Store) load(ctx context.Context, q querier, scope string) (*Schedule, error) {
	var w Window
	var names string
	err := q.QueryRowContext(ctx, s.q(`SELECT days, slots, day_names FROM sched_window WHERE scope = ?`), scope).Scan(&w.Days, &w.Slots, &names)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoSchedule
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the window: %w", err)
	}
	if names != "" {
		w.DayNames = strings.Split(names, ",")
	}
	rows, err := q.QueryContext(ctx, s.q(`SELECT id, title, kind, category, duration, day, start, locked, can_embed, host FROM sched_items WHERE scope = ?`), scope)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the items: %w", err)
	}
	defer rows.Close()
	sch := &Schedule{Window: w, Items: map[int]Item{}}
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.ID, &it.Title, &it.Kind, &it.Category, &it.Duration, &it.Day, &it.Start, &it.Locked, &it.CanEmbed, &it.Host); err != nil {
			return nil, fmt.Errorf("scheduler: read an item: %w", err)
		}
		sch.Items[it.ID] = it
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scheduler: read the items: %w", err)
	}
	rows.Close()
	if sch.Classes, err = s.loadClasses(ctx, q, scope); err != nil {
		return nil, err
	}
	return sch, nil
}

func (s *Store) loadClasses(ctx context.Context, q querier, scope string) (map[string]Class, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT class FROM sched_classes WHERE scope = ?`), scope)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the task classes: %w", err)
	}
	defer rows.Close()
	out := map[string]Class{}
	for rows.Next() {
		var raw string
		var c Class
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("scheduler: read a task class: %w", err)
		}
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return nil, fmt.Errorf("scheduler: a task class row is corrupt: %w", err)
		}
		out[c.Name] = c
	}
	return out, rows.Err()
}

// saveClasses writes the classes of next that differ from cur's.
func (s *Store) saveClasses(ctx context.Context, tx *sql.Tx, scope string, cur, next *Schedule) ([]string, error) {
	var lines []string
	for _, name := range next.classNames() {
		c := next.Classes[name]
		if old, ok := cur.Classes[name]; ok && classEqual(old, c) {
			continue
		}
		raw, _ := json.Marshal(c)
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sched_classes (scope, name, class) VALUES (?, ?, ?) ON CONFLICT (scope, name) DO UPDATE SET class = excluded.class`), scope, name, string(raw)); err != nil {
			return nil, fmt.Errorf("save task class %q: %w", name, err)
		}
		lines = append(lines, c.describe(next.Window))
	}
	return lines, nil
}

// DeleteScope deletes everything the scope holds: its schedule, task
// classes, change log and record of applied calls (a conversation's
// persisted data, when the scope is a thread). It reports whether there
// was anything to delete. Other scopes are untouched.
func (s *Store) DeleteScope(ctx context.Context, scope string) (bool, error) {
	if err := checkScope(scope); err != nil {
		return false, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("scheduler: delete scope: %w", err)
	}
	defer tx.Rollback()
	var n int64
	for _, table := range scopeTables {
		res, err := tx.ExecContext(ctx, s.q("DELETE FROM "+table+" WHERE scope = ?"), scope)
		if err != nil {
			return false, fmt.Errorf("scheduler: delete %s of the scope: %w", table, err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("scheduler: delete scope: %w", err)
	}
	s.committed()
	return n > 0, nil
}

// Seed writes sch as the scope's schedule when the scope holds none, and
// reports whether it did.
func (s *Store) Seed(ctx context.Context, scope string, sch *Schedule) (bool, error) {
	if err := checkScope(scope); err != nil {
		return false, err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	defer tx.Rollback()
	w := sch.Window
	// Of two seeds of one scope at once, the second waits on the first's
	// window row and then inserts nothing.
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sched_window (scope, days, slots, day_names) VALUES (?, ?, ?, ?) ON CONFLICT (scope) DO NOTHING`), scope, w.Days, w.Slots, strings.Join(w.DayNames, ","))
	if err != nil {
		return false, fmt.Errorf("scheduler: seed the window: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("scheduler: seed the window: %w", err)
	} else if n == 0 {
		return false, nil
	}
	for _, it := range sch.Sorted() {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sched_items (scope, id, title, kind, category, duration, day, start, locked, can_embed, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			scope, it.ID, it.Title, it.Kind, it.Category, it.Duration, it.Day, it.Start, it.Locked, it.CanEmbed, it.Host); err != nil {
			return false, fmt.Errorf("scheduler: seed item #%d: %w", it.ID, err)
		}
	}
	if _, err := s.saveClasses(ctx, tx, scope, &Schedule{}, sch); err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	s.committed()
	return true, nil
}

// Op is a write: it returns the changed schedule, or an error that changes
// nothing.
type Op func(*Schedule) (*Schedule, error)

// Apply runs op on the current schedule and saves the result in one
// transaction: the changed items (the diff, not the whole schedule), one
// change-log row per changed item, and the call's result under callID. A
// call ID seen before is not applied again: its saved result is returned,
// so a call re-run after a crash (its effect committed, its result not yet
// in the run's checkpoint) changes nothing twice. An empty callID skips
// that check. It returns what changed, described for the model.
func (s *Store) Apply(ctx context.Context, scope, tool, callID string, op Op) (string, error) {
	if err := checkScope(scope); err != nil {
		return "", err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("scheduler: %s: %w", tool, err)
	}
	defer tx.Rollback()
	if s.pg {
		// One writer per scope at a time (SQLite has one writer in all).
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM sched_window WHERE scope = $1 FOR UPDATE`, scope); err != nil {
			return "", fmt.Errorf("scheduler: %s: lock the schedule: %w", tool, err)
		}
	}
	if callID != "" {
		var prior string
		err := tx.QueryRowContext(ctx, s.q(`SELECT result FROM sched_applied WHERE scope = ? AND call_id = ?`), scope, callID).Scan(&prior)
		if err == nil {
			return prior, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("scheduler: %s: %w", tool, err)
		}
	}
	cur, err := s.load(ctx, tx, scope)
	if err != nil {
		return "", err
	}
	next, err := op(cur)
	if err != nil {
		return "", err // the operation's own words: nothing was written
	}
	changes := cur.Diff(next)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var lines []string
	for _, c := range changes {
		a := c.After
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE sched_items SET day = ?, start = ?, host = ? WHERE scope = ? AND id = ?`), a.Day, a.Start, a.Host, scope, a.ID); err != nil {
			return "", fmt.Errorf("scheduler: %s: save item #%d: %w", tool, a.ID, err)
		}
		before, _ := json.Marshal(c.Before)
		after, _ := json.Marshal(c.After)
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sched_changes (scope, at, call_id, tool, item, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)`), scope, now, callID, tool, a.ID, before, after); err != nil {
			return "", fmt.Errorf("scheduler: %s: log the change of #%d: %w", tool, a.ID, err)
		}
		lines = append(lines, c.Describe(cur.Window))
	}
	classLines, err := s.saveClasses(ctx, tx, scope, cur, next)
	if err != nil {
		return "", fmt.Errorf("scheduler: %s: %w", tool, err)
	}
	lines = append(lines, classLines...)
	result := "Nothing changed."
	if len(lines) > 0 {
		result = "Done: " + strings.Join(lines, "; ") + "."
	}
	if callID != "" {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sched_applied (scope, call_id, tool, result) VALUES (?, ?, ?, ?)`), scope, callID, tool, result); err != nil {
			return "", fmt.Errorf("scheduler: %s: record the call: %w", tool, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("scheduler: %s: commit: %w", tool, err)
	}
	s.committed()
	return result, nil
}

// ChangeLog returns the scope's logged changes in order, for audits and
// tests.
func (s *Store) ChangeLog(ctx context.Context, scope string) ([]LoggedChange, error) {
	rows, err := s.read.QueryContext(ctx, s.q(`SELECT call_id, tool, before, after FROM sched_changes WHERE scope = ? ORDER BY seq`), scope)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the change log: %w", err)
	}
	defer rows.Close()
	var out []LoggedChange
	for rows.Next() {
		var lc LoggedChange
		var before, after string
		if err := rows.Scan(&lc.CallID, &lc.Tool, &before, &after); err != nil {
			return nil, fmt.Errorf("scheduler: read the change log: %w", err)
		}
		if err := json.Unmarshal([]byte(before), &lc.Before); err != nil {
			return nil, fmt.Errorf("scheduler: change log row for %s is corrupt: %w", lc.CallID, err)
		}
		if err := json.Unmarshal([]byte(after), &lc.After); err != nil {
			return nil, fmt.Errorf("scheduler: change log row for %s is corrupt: %w", lc.CallID, err)
		}
		out = append(out, lc)
	}
	return out, rows.Err()
}

// LoggedChange is one row of the change log.
type LoggedChange struct {
	CallID string
	Tool   string
	Before Item
	After  Item
}

// Reset replaces the scope's schedule with sch and clears its change log
// and record of applied calls, for starting a scenario over. Other scopes
// are untouched.
func (s *Store) Reset(ctx context.Context, scope string, sch *Schedule) error {
	if err := checkScope(scope); err != nil {
		return err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("scheduler: reset: %w", err)
	}
	defer tx.Rollback()
	for _, table := range scopeTables {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM "+table+" WHERE scope = ?"), scope); err != nil {
			return fmt.Errorf("scheduler: reset %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("scheduler: reset: %w", err)
	}
	s.committed()
	_, err = s.Seed(ctx, scope, sch)
	return err
}
