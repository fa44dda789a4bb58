package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/queue"
)

// A sampled run's online evaluator job is stored in the transaction that
// records the run's finish: it exists exactly when the finish committed,
// even if the replica dies right after the commit (the after-commit
// insert never happens), and a finish that rolls back leaves none.
func TestOnlineSampleCommitsWithFinish(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testOnlineSampleWithFinish(t, filepath.Join(t.TempDir(), "t.db")) })
	t.Run("postgres", func(t *testing.T) {
		url, _, _ := pgSchema(t, "onlinetx")
		testOnlineSampleWithFinish(t, url)
	})
}

// errDied stands for a replica that dies between the finish's commit and
// anything it would do after it.
var errDied = errors.New("the replica died after the finish committed")

func testOnlineSampleWithFinish(t *testing.T, database string) {
	echo := DefaultAssistantID("echo")
	r := start(t, Config{Database: database, DataDir: t.TempDir(), OnlineEvaluators: map[string][]OnlineEvaluator{
		echo: {{Key: "all", Criterion: contains("echo"), Sample: 1}, {Key: "none", Criterion: contains("echo"), Sample: 0}},
	}}, nil)
	s := r.s
	s.mu.Lock()
	afterCommit, inTx := s.onlineEnqueue, s.onlineEnqueueTx
	s.onlineEnqueue = func(context.Context, queue.OnlineJob) error { return errDied }
	s.mu.Unlock()
	setEnqueue := func(after func(context.Context, queue.OnlineJob) error, tx func(context.Context, any, []queue.OnlineJob) error) {
		s.mu.Lock()
		s.onlineEnqueue, s.onlineEnqueueTx = after, tx
		s.mu.Unlock()
	}

	// A real run through the queue: the sample is there though nothing
	// could be stored after the commit.
	_, run := echoRun(t, r.url, "hi")
	if n := onlineJobs(t, s, run); n != 1 {
		t.Fatalf("run %s: %d online jobs after its finish, want 1 (stored with the finish)", run, n)
	}

	// A finish driven by hand through the same end hook: commit or not.
	finish := func(runID string, fail bool) {
		t.Helper()
		adv := s.onlineAtFinish(func(ctx context.Context, tenant, thread string) (queue.Result, error) {
			if fail { // a later part of the finish fails: nothing commits
				ctx = txhook.WithEnd(ctx, func(context.Context, any) error { return errors.New("finish failed") })
			}
			ended := db.Run{ID: runID, ThreadID: thread, AssistantID: echo, Status: db.RunSuccess}
			err := inFinishTx(ctx, s, func(tx any) error { return txhook.RunEndOf(ctx, tx, ended) })
			if err == nil {
				s.runFinished(context.WithoutCancel(ctx), tenant, ended) // what the run service does after the commit
			}
			return queue.Result{}, err
		})
		_, err := adv(context.Background(), "default", "th-"+runID)
		if fail != (err != nil) {
			t.Fatalf("finish of %s: %v (fail=%v)", runID, err, fail)
		}
	}
	finish("rolled-back", true)
	if n := onlineJobs(t, s, "rolled-back"); n != 0 {
		t.Errorf("a finish that rolled back left %d online jobs, want 0", n)
	}
	finish("committed", false)
	if n := onlineJobs(t, s, "committed"); n != 1 {
		t.Errorf("a committed finish, the replica dead after it: %d online jobs, want 1", n)
	}
	// The insert in the finish fails: the finish commits anyway and the
	// sample is stored after it.
	setEnqueue(afterCommit, func(context.Context, any, []queue.OnlineJob) error { return errors.New("insert failed") })
	finish("fallback", false)
	if n := onlineJobs(t, s, "fallback"); n != 1 {
		t.Errorf("the insert in the finish failed: %d online jobs after the fallback, want 1", n)
	}
	setEnqueue(afterCommit, inTx)
}

// inFinishTx runs fn in a write transaction on the queue's database and
// commits when it returns nil.
func inFinishTx(ctx context.Context, s *Server, fn func(tx any) error) error {
	if s.st.pool != nil {
		return pgx.BeginFunc(ctx, s.st.pool, func(tx pgx.Tx) error { return fn(tx) })
	}
	tx, err := s.st.river.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// onlineJobs counts the online evaluator jobs of run in River's table.
func onlineJobs(t *testing.T, s *Server, run string) int {
	t.Helper()
	var n int
	var err error
	if s.st.pool != nil {
		err = s.st.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM river_job WHERE kind = $1 AND args->>'run_id' = $2`, queue.OnlineKind, run).Scan(&n)
	} else {
		row := s.st.river.QueryRowContext(context.Background(),
			`SELECT count(*) FROM river_job WHERE kind = ? AND json_extract(args, '$.run_id') = ?`, queue.OnlineKind, run)
		err = row.Scan(&n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkOnlineFinish measures a sampled run's finish on SQLite: a
// write transaction standing for the finish, plus its two evaluators'
// samples (one always sampled, one a tenth of the time) stored either
// after the commit in writes of their own (after-commit, as the Finished
// hook's fallback does) or in the finish transaction (in-finish, the end
// hook).
func BenchmarkOnlineFinish(b *testing.B) {
	sdb, err := sqlitedb.Open(context.Background(), filepath.Join(b.TempDir(), "q.db"), "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sdb.Close()
	q, err := queue.New(context.Background(), queue.Config{SQLite: sdb.Write, Logger: quiet(),
		Advance: func(context.Context, string, string) (queue.Result, error) { return queue.Result{}, nil },
		Online:  func(context.Context, queue.OnlineJob) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Stop(context.Background())
	if _, err := sdb.Write.Exec(`CREATE TABLE bench_finish (id INTEGER PRIMARY KEY, ended INTEGER)`); err != nil {
		b.Fatal(err)
	}
	s := &Server{log: quiet(), onlineEnqueue: q.EnqueueOnline, onlineEnqueueTx: q.EnqueueOnlineTx, st: &storage{river: sdb.Write}}
	s.cfg.OnlineEvaluators = map[string][]OnlineEvaluator{"a": {
		{Key: "all", Criterion: contains("x"), Sample: 1},
		{Key: "tenth", Criterion: contains("x"), Sample: 0.1},
	}}
	i := 0
	finish := func(b *testing.B, ctx context.Context) db.Run {
		i++
		run := db.Run{ID: fmt.Sprint("run-", i), ThreadID: "th", Status: db.RunSuccess, AssistantID: "a"}
		err := inFinishTx(ctx, s, func(tx any) error {
			if _, err := tx.(*sql.Tx).ExecContext(ctx, `INSERT INTO bench_finish (id, ended) VALUES (?, 1)`, i); err != nil {
				return err
			}
			return txhook.RunEndOf(ctx, tx, run)
		})
		if err != nil {
			b.Fatal(err)
		}
		return run
	}
	b.Run("after-commit", func(b *testing.B) {
		for b.Loop() {
			run := finish(b, context.Background())
			s.onlineFinished(context.Background(), "t", run)
		}
	})
	b.Run("in-finish", func(b *testing.B) {
		adv := s.onlineAtFinish(func(ctx context.Context, _, _ string) (queue.Result, error) {
			s.onlineFinished(ctx, "t", finish(b, ctx))
			return queue.Result{}, nil
		})
		for b.Loop() {
			if _, err := adv(context.Background(), "t", "th"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
