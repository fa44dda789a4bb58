package queue

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// sqliteDriver is River's SQLite driver with its notification listener
// switched off. River v0.51 emulates LISTEN/NOTIFY on SQLite with an outbox
// table that its listener polls every 50 ms (a fixed interval), and while
// a driver has a listener an insert in this process wakes the workers only
// through that table: enqueue-to-start latency was 25 ms on average. A
// driver without a listener puts River in its poll-only mode, in which an
// insert made by this client wakes this client's workers at once (as for
// River's database/sql driver); jobs from other processes are found by the
// FetchPollInterval poll. The embedded database has one serving process, so
// the in-process wake-up is the one that matters.
type sqliteDriver struct {
	*riversqlite.Driver
}

// SupportsListener reports no listener: River then runs poll-only and
// wakes its own workers on each insert.
func (sqliteDriver) SupportsListener() bool { return false }

// SupportsListenNotify reports no notifications, so inserts do not write
// outbox rows that nothing reads.
func (sqliteDriver) SupportsListenNotify() bool { return false }

// sqliteEngine runs the queue on SQLite.
type sqliteEngine struct {
	client *river.Client[*sql.Tx]
	db     *sql.DB
}

func newSQLiteEngine(ctx context.Context, cfg Config, rcfg *river.Config) (*sqliteEngine, error) {
	driver := sqliteDriver{riversqlite.New(cfg.SQLite)}
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("queue: migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("queue: apply River's migrations on SQLite: %w", err)
	}
	client, err := river.NewClient(driver, rcfg)
	if err != nil {
		return nil, fmt.Errorf("queue: create the River client: %w", err)
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("queue: start the River client on SQLite: %w", err)
	}
	return &sqliteEngine{client: client, db: cfg.SQLite}, nil
}

func (e *sqliteEngine) ops() jobOps {
	return jobOps{insert: e.client.Insert, del: e.client.JobDelete, retry: e.client.JobRetry}
}

func (e *sqliteEngine) complete(ctx context.Context, job *river.Job[args]) error {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[sqliteDriver](ctx, tx, job); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (e *sqliteEngine) completeIn(ctx context.Context, tx any, job *river.Job[args]) error {
	stx, ok := tx.(*sql.Tx)
	if !ok || stx == nil {
		return fmt.Errorf("queue: complete job %d: need a *sql.Tx, got %T", job.ID, tx)
	}
	// A failing statement leaves a SQLite transaction usable.
	_, err := river.JobCompleteTx[sqliteDriver](ctx, stx, job)
	return err
}

func (e *sqliteEngine) stop(ctx context.Context) error          { return e.client.Stop(ctx) }
func (e *sqliteEngine) stopAndCancel(ctx context.Context) error { return e.client.StopAndCancel(ctx) }
