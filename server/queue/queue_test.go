package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
)

const wait = 10 * time.Second

// Enqueue leads to one Advance call with the job's tenant and thread, and
// two tenants may use the same thread ID without sharing jobs.
func TestEnqueueCallsAdvance(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		calls := make(chan call, 10)
		cfg := b.open(t)
		cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		ctx := context.Background()
		if err := q.Enqueue(ctx, "tenant-a", "thread-1"); err != nil {
			t.Fatal(err)
		}
		if c := recv(t, calls, wait); c.tenant != "tenant-a" || c.thread != "thread-1" {
			t.Fatalf("Advance(%q, %q), want (tenant-a, thread-1)", c.tenant, c.thread)
		}
		if err := q.Enqueue(ctx, "tenant-b", "thread-1"); err != nil {
			t.Fatal(err)
		}
		if c := recv(t, calls, wait); c.tenant != "tenant-b" || c.thread != "thread-1" {
			t.Fatalf("Advance(%q, %q), want (tenant-b, thread-1)", c.tenant, c.thread)
		}
		none(t, calls, 200*time.Millisecond)
		// A finished thread can be enqueued again: completed jobs do not
		// hold its slot.
		if err := q.Enqueue(ctx, "tenant-a", "thread-1"); err != nil {
			t.Fatal(err)
		}
		if c := recv(t, calls, wait); c.tenant != "tenant-a" {
			t.Fatalf("third call for tenant %q", c.tenant)
		}
	})
}

// Busy snoozes the job for Result.After, then Advance is called again for
// the same thread; Done then completes it.
func TestBusySnoozesAndRunsAgain(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		const snooze = 300 * time.Millisecond
		calls := make(chan call, 10)
		var n atomic.Int32
		cfg := b.open(t)
		cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			if n.Add(1) == 1 {
				return Result{Outcome: Busy, After: snooze}, nil
			}
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		if err := q.Enqueue(context.Background(), "t", "busy-thread"); err != nil {
			t.Fatal(err)
		}
		first := recv(t, calls, wait)
		second := recv(t, calls, wait)
		if second.thread != "busy-thread" || second.tenant != "t" {
			t.Errorf("second call for %s/%s", second.tenant, second.thread)
		}
		if gap := second.at.Sub(first.at); gap < snooze {
			t.Errorf("the snoozed job ran again after %s, before its %s snooze ended", gap, snooze)
		}
		none(t, calls, 300*time.Millisecond)
		jobs := jobsOf(t, q, "busy-thread")
		if len(jobs) != 1 || jobs[0].State != rivertype.JobStateCompleted {
			t.Fatalf("jobs = %v, want one completed job", states(jobs))
		}
	})
}

// A Busy result with a negative duration and an unknown outcome are logged
// as the Advance function's mistakes; the first snoozes for BusySnooze, the
// second completes its job.
func TestBadResultsAreLogged(t *testing.T) {
	calls := make(chan call, 10)
	var logs logBuffer
	var n atomic.Int32
	cfg := openSQLite(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.BusySnooze = 100 * time.Millisecond
	cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
		calls <- call{tenant, thread, time.Now()}
		if n.Add(1) == 1 {
			return Result{Outcome: Busy, After: -time.Second}, nil
		}
		return Result{Outcome: Outcome(7)}, nil
	}
	q := start(t, cfg)
	if err := q.Enqueue(context.Background(), "t", "odd"); err != nil {
		t.Fatal(err)
	}
	first := recv(t, calls, wait)
	if second := recv(t, calls, wait); second.at.Sub(first.at) < cfg.BusySnooze {
		t.Errorf("the job ran again after %s, before BusySnooze", second.at.Sub(first.at))
	}
	none(t, calls, 300*time.Millisecond)
	for _, want := range []string{"negative duration", "unknown outcome", "Outcome(7)"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
}

// More enqueues the thread again: Advance is called once more.
func TestMoreEnqueuesAgain(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		calls := make(chan call, 10)
		var n atomic.Int32
		cfg := b.open(t)
		cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			if n.Add(1) < 3 {
				return Result{Outcome: More}, nil
			}
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		if err := q.Enqueue(context.Background(), "t", "more-thread"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if c := recv(t, calls, wait); c.thread != "more-thread" {
				t.Fatalf("call for %q", c.thread)
			}
		}
		none(t, calls, 300*time.Millisecond)
	})
}

// An Advance that fails or panics completes its job: River never calls it
// again, and the failure is logged with the thread.
func TestAdvanceErrorCompletesWithoutRetry(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		calls := make(chan call, 10)
		var logs logBuffer
		cfg := b.open(t)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
		cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			if thread == "panics" {
				panic("node exploded")
			}
			return Result{}, errors.New("model unreachable")
		}
		q := start(t, cfg)
		for _, th := range []string{"fails", "panics"} {
			if err := q.Enqueue(context.Background(), "t", th); err != nil {
				t.Fatal(err)
			}
			recv(t, calls, wait)
		}
		none(t, calls, 500*time.Millisecond)
		for _, th := range []string{"fails", "panics"} {
			deadline := time.Now().Add(wait)
			for {
				jobs := jobsOf(t, q, th)
				if len(jobs) == 1 && jobs[0].State == rivertype.JobStateCompleted && jobs[0].Attempt == 1 && jobs[0].MaxAttempts == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: jobs = %v, want one completed job attempted once", th, states(jobs))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		for _, want := range []string{"model unreachable", "node exploded", "thread_id=fails", "thread_id=panics"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the log lacks %q:\n%s", want, logs.String())
			}
		}
	})
}

// Stop waits for a running Advance to return.
func TestStopWaitsForRunningJobs(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		started := make(chan struct{})
		release := make(chan struct{})
		var finished atomic.Bool
		cfg := b.open(t)
		cfg.Advance = func(ctx context.Context, _, _ string) (Result, error) {
			close(started)
			<-release
			finished.Store(true)
			return Result{Outcome: Done}, ctx.Err()
		}
		q, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(context.Background(), "t", "slow"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(wait):
			t.Fatal("Advance did not start")
		}
		stopped := make(chan error, 1)
		go func() { stopped <- q.Stop(context.Background()) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a job was running", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("Stop: %v", err)
			}
		case <-time.After(wait):
			t.Fatal("Stop did not return after the job finished")
		}
		if !finished.Load() {
			t.Error("Stop returned before Advance did")
		}
		if err := q.Stop(context.Background()); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

// When Stop's context ends first, the running Advance's context is
// cancelled, Stop waits for it and reports the deadline.
func TestStopDeadlineCancelsRunningJobs(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		started := make(chan struct{})
		var sawCancel atomic.Bool
		cfg := b.open(t)
		cfg.Advance = func(ctx context.Context, _, _ string) (Result, error) {
			close(started)
			<-ctx.Done()
			sawCancel.Store(true)
			return Result{}, ctx.Err()
		}
		q, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(context.Background(), "t", "stuck"); err != nil {
			t.Fatal(err)
		}
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err = q.Stop(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop = %v, want the deadline error", err)
		}
		if !sawCancel.Load() {
			t.Error("Stop returned before the running Advance saw its context cancelled")
		}
	})
}

// JobTimeout cancels a long Advance; its job completes and is not retried.
func TestJobTimeoutInterruptsWithoutRetry(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		calls := make(chan call, 10)
		cfg := b.open(t)
		cfg.JobTimeout = 200 * time.Millisecond
		cfg.Advance = func(ctx context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			<-ctx.Done()
			return Result{}, ctx.Err()
		}
		q := start(t, cfg)
		if err := q.Enqueue(context.Background(), "t", "long"); err != nil {
			t.Fatal(err)
		}
		recv(t, calls, wait)
		none(t, calls, time.Second)
		if jobs := jobsOf(t, q, "long"); len(jobs) != 1 || jobs[0].State != rivertype.JobStateCompleted {
			t.Fatalf("jobs = %v, want one completed", states(jobs))
		}
	})
}

func states(jobs []*rivertype.JobRow) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, fmt.Sprintf("%d:%s(attempt %d/%d)", j.ID, j.State, j.Attempt, j.MaxAttempts))
	}
	return out
}

// Bad configurations and IDs are refused with errors naming the problem.
func TestBadInput(t *testing.T) {
	advance := func(context.Context, string, string) (Result, error) { return Result{}, nil }
	multi, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	one, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	one.SetMaxOpenConns(1)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no database", Config{Advance: advance}, "neither SQLite nor Postgres"},
		{"no advance", Config{SQLite: one}, "no Advance function is set"},
		{"pool of many", Config{SQLite: multi, Advance: advance}, "needs a pool of one"},
		{"schema on sqlite", Config{SQLite: one, Schema: "x", Advance: advance}, "Schema is set for SQLite"},
		{"negative timeout", Config{SQLite: one, Advance: advance, JobTimeout: -time.Second}, "JobTimeout is -1s"},
		{"workers", Config{SQLite: one, Advance: advance, Workers: -1}, "Workers is -1"},
		{"queue name", Config{SQLite: one, Advance: advance, QueueName: "a b"}, `QueueName "a b"`},
		{"poll below cooldown", Config{SQLite: one, Advance: advance, FetchCooldown: time.Second, FetchPollInterval: time.Millisecond}, "shorter than FetchCooldown"},
		{"negative unit timeout", Config{SQLite: one, Advance: advance, UnitTimeout: -time.Minute}, "UnitTimeout is -1m0s"},
		{"tiny hand-off window", Config{SQLite: one, Advance: advance, HandoffWindow: time.Millisecond}, "HandoffWindow is 1ms"},
		{"negative hand-off window", Config{SQLite: one, Advance: advance, HandoffWindow: -time.Second}, "HandoffWindow is -1s"},
		{"hand-offs", Config{SQLite: one, Advance: advance, Handoffs: 20000}, "Handoffs is 20000"},
	} {
		q, err := New(context.Background(), tc.cfg)
		if err == nil {
			q.Stop(context.Background())
			t.Errorf("%s: New accepted the config", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q lacks %q", tc.name, err, tc.want)
		}
	}

	cfg := openSQLite(t)
	cfg.Advance = advance
	q := start(t, cfg)
	for _, tc := range []struct{ tenant, thread, want string }{
		{"", "x", "tenant is empty"},
		{"t", "", "thread ID is empty"},
		{"t", "a\x00b", "NUL byte"},
	} {
		if err := q.Enqueue(context.Background(), tc.tenant, tc.thread); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Enqueue(%q, %q) = %v, want an error with %q", tc.tenant, tc.thread, err, tc.want)
		}
	}
	if err := q.EnqueueTx(context.Background(), nil, "t", "x"); err == nil || !strings.Contains(err.Error(), "needs a PostgreSQL queue") {
		t.Errorf("EnqueueTx on SQLite = %v", err)
	}
}

// EnqueueAt starts the thread's job no earlier than asked, and an Enqueue
// meanwhile does not pull the delayed job forward.
func TestEnqueueAtWaits(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		calls := make(chan call, 10)
		cfg := b.open(t)
		cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
			calls <- call{tenant, thread, time.Now()}
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		ctx := context.Background()
		at := time.Now().Add(400 * time.Millisecond)
		if err := q.EnqueueAt(ctx, "t", "later", at); err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, "t", "later"); err != nil {
			t.Fatal(err)
		}
		if c := recv(t, calls, wait); c.at.After(at) {
			t.Fatalf("the immediate request ran only at %s, after the delayed time", c.at)
		}
		c := recv(t, calls, wait)
		if c.at.Before(at) {
			t.Fatalf("the delayed job ran %s early", at.Sub(c.at))
		}
		if err := q.EnqueueAt(ctx, "", "x", at); err == nil {
			t.Error("EnqueueAt accepted an empty tenant")
		}
	})
}

// Migrate applies River's schema without starting a client, again
// without harm, on both databases.
func TestMigrateAlone(t *testing.T) {
	ctx := context.Background()
	count := map[string]func(Config) (int, error){
		"sqlite": func(c Config) (n int, err error) {
			err = c.SQLite.QueryRowContext(ctx, `SELECT count(*) FROM river_migration`).Scan(&n)
			return
		},
		"postgres": func(c Config) (n int, err error) {
			err = c.Postgres.QueryRow(ctx, `SELECT count(*) FROM river_migration`).Scan(&n)
			return
		},
	}
	for name, open := range map[string]func(testing.TB) Config{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			cfg := open(t)
			for range 2 {
				if err := Migrate(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := count[name](cfg); err != nil || n == 0 {
				t.Fatalf("river_migration has %d rows (%v) after Migrate", n, err)
			}
		})
	}
	if err := Migrate(ctx, Config{}); err == nil {
		t.Fatal("Migrate without a database succeeded")
	}
}

// Processes starting at once on a fresh PostgreSQL schema each migrate
// River's tables (each with its own pool, as separate replicas do): all
// succeed, under the migration lock, and the schema ends up as one
// migration would leave it.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	base := openPostgres(t)
	const procs = 4
	errs := make(chan error, procs)
	for range procs {
		pool, err := pgdb.Connect(ctx, testenv.PostgresDSN(t), base.Schema)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		cfg := base
		cfg.Postgres = pool
		go func() { errs <- Migrate(ctx, cfg) }()
	}
	for range procs {
		if err := <-errs; err != nil {
			t.Errorf("a concurrent Migrate: %v", err)
		}
	}
	var rows, versions int
	if err := base.Postgres.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM river_migration`).Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows != versions {
		t.Errorf("river_migration has %d rows for %d versions after concurrent migrations; want each version once", rows, versions)
	}
}
