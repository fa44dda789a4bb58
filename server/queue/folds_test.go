package queue

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/txhook"
)

// marks is a table of the test's own, written in the queue's transactions.
const marksDDL = `CREATE TABLE folds_marks (thread TEXT NOT NULL)`

// execIn runs one statement in tx, the queue's transaction of either kind.
func execIn(ctx context.Context, tx any, q string, args ...any) error {
	switch tx := tx.(type) {
	case *sql.Tx:
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	case pgx.Tx:
		_, err := tx.Exec(ctx, q, args...)
		return err
	}
	return errors.New("not a transaction of the queue's database")
}

// placeholder is the backend's first bind parameter.
func placeholder(cfg Config) string {
	if cfg.SQLite != nil {
		return "?"
	}
	return "$1"
}

// countMarks counts the thread's rows in folds_marks.
func countMarks(t testing.TB, cfg Config, thread string) int {
	t.Helper()
	var n int
	var err error
	q := `SELECT count(*) FROM folds_marks WHERE thread = ` + placeholder(cfg)
	if cfg.SQLite != nil {
		err = cfg.SQLite.QueryRow(q, thread).Scan(&n)
	} else {
		err = cfg.Postgres.QueryRow(context.Background(), q, thread).Scan(&n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func createMarks(t testing.TB, cfg Config) {
	t.Helper()
	var err error
	if cfg.SQLite != nil {
		_, err = cfg.SQLite.Exec(marksDDL)
	} else {
		_, err = cfg.Postgres.Exec(context.Background(), marksDDL)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// EnqueueWith commits the caller's rows with the job: Advance, called for
// the job, always finds them; a failing function leaves neither rows nor a
// job behind.
func TestEnqueueWithCommitsWithTheJob(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		createMarks(t, cfg)
		seen := make(chan int, 10)
		cfg.Advance = func(_ context.Context, _, thread string) (Result, error) {
			seen <- countMarks(t, cfg, thread)
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		ctx := context.Background()
		mark := func(ctx context.Context, tx any) error {
			return execIn(ctx, tx, `INSERT INTO folds_marks (thread) VALUES (`+placeholder(cfg)+`)`, "thread-1")
		}
		stored, err := q.EnqueueWith(ctx, "tenant-a", "thread-1", mark)
		if err != nil || !stored {
			t.Fatalf("EnqueueWith: stored %v, %v", stored, err)
		}
		if n := take(t, seen); n != 1 {
			t.Fatalf("Advance found %d rows of the caller's, want 1", n)
		}

		boom := errors.New("boom")
		stored, err = q.EnqueueWith(ctx, "tenant-a", "thread-2", func(ctx context.Context, tx any) error {
			if err := execIn(ctx, tx, `INSERT INTO folds_marks (thread) VALUES (`+placeholder(cfg)+`)`, "thread-2"); err != nil {
				return err
			}
			return boom
		})
		if stored || !errors.Is(err, boom) {
			t.Fatalf("EnqueueWith with a failing function: stored %v, %v; want not stored, %v", stored, err, boom)
		}
		if n := countMarks(t, cfg, "thread-2"); n != 0 {
			t.Fatalf("a failed EnqueueWith left %d rows", n)
		}
		if jobs := jobsOf(t, q, "thread-2"); len(jobs) != 0 {
			t.Fatalf("a failed EnqueueWith left %d jobs", len(jobs))
		}
	})
}

// A write Advance makes that runs the internal/txhook end hook completes
// the job in its own transaction: the job reads completed as soon as that
// transaction commits, before Advance returns.
func TestEndHookCompletesTheJobInTheCallersTransaction(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		createMarks(t, cfg)
		var q *Queue
		states := make(chan rivertype.JobState, 10)
		cfg.Advance = func(ctx context.Context, _, thread string) (Result, error) {
			ins := `INSERT INTO folds_marks (thread) VALUES (` + placeholder(cfg) + `)`
			if cfg.SQLite != nil {
				tx, err := cfg.SQLite.BeginTx(ctx, nil)
				if err != nil {
					return Result{}, err
				}
				if _, err := tx.ExecContext(ctx, ins, thread); err != nil {
					return Result{}, errors.Join(err, tx.Rollback())
				}
				if err := txhook.RunEnd(ctx, tx); err != nil {
					return Result{}, errors.Join(err, tx.Rollback())
				}
				if err := tx.Commit(); err != nil {
					return Result{}, err
				}
			} else {
				err := pgx.BeginFunc(ctx, cfg.Postgres, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, ins, thread); err != nil {
						return err
					}
					return txhook.RunEnd(ctx, tx)
				})
				if err != nil {
					return Result{}, err
				}
			}
			for _, j := range jobsOf(t, q, thread) {
				states <- j.State
			}
			return Result{Outcome: Done}, nil
		}
		q = start(t, cfg)
		if err := q.Enqueue(context.Background(), "tenant-a", "thread-1"); err != nil {
			t.Fatal(err)
		}
		if s := take(t, states); s != rivertype.JobStateCompleted {
			t.Fatalf("after the transaction with the end hook the job is %s, want completed", s)
		}
		if n := countMarks(t, cfg, "thread-1"); n != 1 {
			t.Fatalf("%d rows of the caller's, want 1", n)
		}
	})
}

// take receives from ch, failing the test after the package's wait.
func take[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("nothing received")
	}
	var zero T
	return zero
}
