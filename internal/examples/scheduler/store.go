package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
)

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
`}}

// Store keeps a schedule in SQLite. Writes go through Apply, which runs an
// operation on the current schedule and saves its diff, the change log and
// the call's result in one transaction.
type Store struct {
	db *sqlitedb.DB
}

// Open opens (creating if needed) the schedule database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, "scheduler", migrations)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// Load reads the schedule. A database never seeded is an error saying so.
func (s *Store) Load(ctx context.Context) (*Schedule, error) {
	return load(ctx, s.db.Read)
}

func load(ctx context.Context, q querier) (*Schedule, error) {
	var w Window
	var names string
	err := q.QueryRowContext(ctx, `SELECT days, slots, day_names FROM sched_window WHERE id = 1`).Scan(&w.Days, &w.Slots, &names)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errors.New("scheduler: the database holds no schedule yet; seed it first (Seed)")
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the window: %w", err)
	}
	if names != "" {
		w.DayNames = strings.Split(names, ",")
	}
	rows, err := q.QueryContext(ctx, `SELECT id, title, kind, category, duration, day, start, locked, can_embed, host FROM sched_items`)
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
	return sch, nil
}

// Seed writes sch as the schedule when the database holds none, and
// reports whether it did.
func (s *Store) Seed(ctx context.Context, sch *Schedule) (bool, error) {
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sched_window`).Scan(&n); err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	if n > 0 {
		return false, nil
	}
	w := sch.Window
	if _, err := tx.ExecContext(ctx, `INSERT INTO sched_window (id, days, slots, day_names) VALUES (1, ?, ?, ?)`, w.Days, w.Slots, strings.Join(w.DayNames, ",")); err != nil {
		return false, fmt.Errorf("scheduler: seed the window: %w", err)
	}
	for _, it := range sch.Sorted() {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sched_items (id, title, kind, category, duration, day, start, locked, can_embed, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			it.ID, it.Title, it.Kind, it.Category, it.Duration, it.Day, it.Start, it.Locked, it.CanEmbed, it.Host); err != nil {
			return false, fmt.Errorf("scheduler: seed item #%d: %w", it.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("scheduler: seed: %w", err)
	}
	s.db.Committed()
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
func (s *Store) Apply(ctx context.Context, tool, callID string, op Op) (string, error) {
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("scheduler: %s: %w", tool, err)
	}
	defer tx.Rollback()
	if callID != "" {
		var prior string
		err := tx.QueryRowContext(ctx, `SELECT result FROM sched_applied WHERE call_id = ?`, callID).Scan(&prior)
		if err == nil {
			return prior, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("scheduler: %s: %w", tool, err)
		}
	}
	cur, err := load(ctx, tx)
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
		if _, err := tx.ExecContext(ctx, `UPDATE sched_items SET day = ?, start = ?, host = ? WHERE id = ?`, a.Day, a.Start, a.Host, a.ID); err != nil {
			return "", fmt.Errorf("scheduler: %s: save item #%d: %w", tool, a.ID, err)
		}
		before, _ := json.Marshal(c.Before)
		after, _ := json.Marshal(c.After)
		if _, err := tx.ExecContext(ctx, `INSERT INTO sched_changes (at, call_id, tool, item, before, after) VALUES (?, ?, ?, ?, ?, ?)`, now, callID, tool, a.ID, before, after); err != nil {
			return "", fmt.Errorf("scheduler: %s: log the change of #%d: %w", tool, a.ID, err)
		}
		lines = append(lines, c.Describe(cur.Window))
	}
	result := "Nothing changed."
	if len(lines) > 0 {
		result = "Done: " + strings.Join(lines, "; ") + "."
	}
	if callID != "" {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sched_applied (call_id, tool, result) VALUES (?, ?, ?)`, callID, tool, result); err != nil {
			return "", fmt.Errorf("scheduler: %s: record the call: %w", tool, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("scheduler: %s: commit: %w", tool, err)
	}
	s.db.Committed()
	return result, nil
}

// ChangeLog returns the logged changes in order, for audits and tests.
func (s *Store) ChangeLog(ctx context.Context) ([]LoggedChange, error) {
	rows, err := s.db.Read.QueryContext(ctx, `SELECT call_id, tool, before, after FROM sched_changes ORDER BY seq`)
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

// Reset replaces the schedule with sch and clears the change log and the
// record of applied calls, for starting a scenario over.
func (s *Store) Reset(ctx context.Context, sch *Schedule) error {
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("scheduler: reset: %w", err)
	}
	defer tx.Rollback()
	for _, table := range []string{"sched_window", "sched_items", "sched_changes", "sched_applied"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("scheduler: reset %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("scheduler: reset: %w", err)
	}
	s.db.Committed()
	_, err = s.Seed(ctx, sch)
	return err
}
