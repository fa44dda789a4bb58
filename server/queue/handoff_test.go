package queue

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// visit is one Advance call of a hand-off test: the thread's job rows as
// the call found them.
type visit struct {
	jobs []*rivertype.JobRow
	at   time.Time
}

// handedOff reports whether the call ran as a hand-off: the thread's one
// live row is still scheduled and never attempted, so River did not
// fetch it.
func (v visit) handedOff() bool {
	live := 0
	ok := false
	for _, j := range v.jobs {
		switch j.State {
		case rivertype.JobStateRunning, rivertype.JobStateAvailable:
			live++
		case rivertype.JobStateScheduled:
			live++
			ok = j.AttemptedAt == nil
		}
	}
	return live == 1 && ok
}

// finishIn writes a row of folds_marks in a transaction that runs the end
// hooks, as the run service's finish does.
func finishIn(ctx context.Context, cfg Config, thread string) error {
	ins := `INSERT INTO folds_marks (thread) VALUES (` + placeholder(cfg) + `)`
	if cfg.SQLite != nil {
		tx, err := cfg.SQLite.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, ins, thread); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		if err := txhook.RunEnd(ctx, tx); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		return tx.Commit()
	}
	return pgx.BeginFunc(ctx, cfg.Postgres, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, ins, thread); err != nil {
			return err
		}
		return txhook.RunEnd(ctx, tx)
	})
}

// noop is an EnqueueWith function that writes nothing.
func noop(context.Context, any) error { return nil }

// handoffQueue starts a queue whose Advance records a visit per call and
// answers with script(n, ctx) for the n-th call (from 1).
func handoffQueue(t *testing.T, cfg Config, script func(ctx context.Context, n int32, thread string) (Result, error)) (*Queue, <-chan visit) {
	t.Helper()
	visits := make(chan visit, 20)
	var q *Queue
	var n atomic.Int32
	cfg.Advance = func(ctx context.Context, _, thread string) (Result, error) {
		visits <- visit{jobs: jobsOf(t, q, thread), at: time.Now()}
		return script(ctx, n.Add(1), thread)
	}
	q = start(t, cfg)
	return q, visits
}

func waitNoJobs(t *testing.T, q *Queue, thread string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		jobs := jobsOf(t, q, thread)
		if len(jobs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread's jobs are %v, want none left", states(jobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFreeSlots waits until the queue has n hand-off slots free.
func waitFreeSlots(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		q.hand.mu.Lock()
		free := q.hand.free
		q.hand.mu.Unlock()
		if free == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d hand-off slots free, want %d", free, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A job EnqueueWith inserts fresh is worked here without River's fetch,
// and the run's finish deletes it in its own transaction: nothing of the
// job is left, and River never calls Advance for it again. Without a
// finish that runs the hook, the row is deleted after Advance returns.
func TestHandoffRunsWithoutFetch(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		createMarks(t, cfg)
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if thread == "finish" {
				return Result{Outcome: Done}, finishIn(ctx, cfg, thread)
			}
			return Result{Outcome: Done}, nil
		})
		for _, thread := range []string{"finish", "plain"} {
			if stored, err := q.EnqueueWith(context.Background(), "t", thread, noop); err != nil || !stored {
				t.Fatalf("EnqueueWith: %v, %v", stored, err)
			}
			v := take(t, visits)
			if !v.handedOff() {
				t.Fatalf("%s: Advance found the jobs %v, want the one scheduled job never fetched", thread, states(v.jobs))
			}
			waitNoJobs(t, q, thread)
		}
		noVisit(t, visits, 300*time.Millisecond)
		if n := countMarks(t, cfg, "finish"); n != 1 {
			t.Fatalf("the finish stored %d rows, want 1", n)
		}
	})
}

// With every hand-off slot taken, EnqueueWith queues through River as
// before: the job is fetched.
func TestHandoffFallsBackWhenFull(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.Handoffs = 1
		hold := make(chan struct{})
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if thread == "held" {
				<-hold
			}
			return Result{Outcome: Done}, nil
		})
		ctx := context.Background()
		if _, err := q.EnqueueWith(ctx, "t", "held", noop); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("the first job was not handed off: %v", states(v.jobs))
		}
		if _, err := q.EnqueueWith(ctx, "t", "other", noop); err != nil {
			t.Fatal(err)
		}
		v := take(t, visits)
		close(hold)
		if v.handedOff() || len(v.jobs) != 1 || v.jobs[0].State != rivertype.JobStateRunning {
			t.Fatalf("with the slot taken the job ran as %v, want one job River fetched", states(v.jobs))
		}
		waitNoJobs(t, q, "held")
		// The row goes in the finish, the slot a moment later, when the
		// hand-off's goroutine returns: wait for the slot, not the row.
		waitFreeSlots(t, q, 1)
		if _, err := q.EnqueueWith(ctx, "t", "third", noop); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("after the slot was freed the job was not handed off: %v", states(v.jobs))
		}
	})
}

// A process that dies after the commit never runs its goroutine: the job
// comes due at the end of the window and River works it.
func TestHandoffOfADeadProcessRunsAfterTheWindow(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.HandoffWindow = time.Second
		q, visits := handoffQueue(t, cfg, func(context.Context, int32, string) (Result, error) {
			return Result{Outcome: Done}, nil
		})
		q.hand.mu.Lock()
		q.hand.drop = true
		q.hand.mu.Unlock()
		began := time.Now()
		if _, err := q.EnqueueWith(context.Background(), "t", "orphan", noop); err != nil {
			t.Fatal(err)
		}
		// River's scheduler makes due jobs available every 5 s.
		select {
		case v := <-visits:
			if gap := v.at.Sub(began); gap < cfg.HandoffWindow {
				t.Fatalf("the orphaned job ran after %s, within its %s window", gap, cfg.HandoffWindow)
			}
			if v.handedOff() {
				t.Fatalf("the orphaned job ran as a hand-off: %v", states(v.jobs))
			}
		case <-time.After(3 * wait):
			t.Fatal("the orphaned job never ran")
		}
	})
}

// A hand-off that outlasts its window pushes its row back: River, which
// makes due jobs available every 5 s, never works it meanwhile.
func TestHandoffOutlastingItsWindowKeepsItsJob(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.HandoffWindow = 600 * time.Millisecond
		const hold = 6500 * time.Millisecond
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if n == 1 {
				time.Sleep(hold)
			}
			return Result{Outcome: Done}, nil
		})
		if _, err := q.EnqueueWith(context.Background(), "t", "long", noop); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("not handed off: %v", states(v.jobs))
		}
		noVisit(t, visits, hold)
		waitNoJobs(t, q, "long")
		noVisit(t, visits, 300*time.Millisecond)
	})
}

// A request made while the handed-off job runs (Enqueue finds the job
// waiting in its slot) is not lost: Advance runs again, here, after the
// call in progress, and nothing else is queued.
func TestHandoffAbsorbsARequestDuringItsRun(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		createMarks(t, cfg)
		hold := make(chan struct{})
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if n == 1 {
				<-hold
			}
			return Result{Outcome: Done}, finishIn(ctx, cfg, thread)
		})
		ctx := context.Background()
		if _, err := q.EnqueueWith(ctx, "t", "busy", noop); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("not handed off: %v", states(v.jobs))
		}
		if err := q.Enqueue(ctx, "t", "busy"); err != nil {
			t.Fatal(err)
		}
		close(hold)
		v := take(t, visits)
		if !v.handedOff() {
			t.Fatalf("the absorbed request ran as %v, want the same handed-off job again", states(v.jobs))
		}
		waitNoJobs(t, q, "busy")
		noVisit(t, visits, 300*time.Millisecond)
	})
}

// Busy waits here and calls Advance again after Result.After, with no
// write; More queues the rest through River and ends the hand-off.
func TestHandoffBusyAndMore(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		const snooze = 200 * time.Millisecond
		cfg := b.open(t)
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			switch n {
			case 1:
				return Result{Outcome: Busy, After: snooze}, nil
			case 2:
				return Result{Outcome: More}, nil
			}
			return Result{Outcome: Done}, nil
		})
		if _, err := q.EnqueueWith(context.Background(), "t", "bm", noop); err != nil {
			t.Fatal(err)
		}
		first := take(t, visits)
		second := take(t, visits)
		if !first.handedOff() || !second.handedOff() {
			t.Fatalf("Busy went through River: %v then %v", states(first.jobs), states(second.jobs))
		}
		if gap := second.at.Sub(first.at); gap < snooze {
			t.Fatalf("Advance ran again %s after Busy, before its %s", gap, snooze)
		}
		if second.jobs[0].ID != first.jobs[0].ID {
			t.Fatalf("Busy replaced the job %d by %d", first.jobs[0].ID, second.jobs[0].ID)
		}
		third := take(t, visits)
		if third.handedOff() {
			t.Fatalf("the work left by More ran as a hand-off: %v", states(third.jobs))
		}
		for _, j := range third.jobs {
			if j.ID == first.jobs[0].ID {
				t.Fatalf("the handed-off job is still there after More: %v", states(third.jobs))
			}
		}
		noVisit(t, visits, 300*time.Millisecond)
	})
}

// Stop waits for a handed-off Advance; a stop deadline cancels it, and
// its job is left for River (here: due at the end of the window).
func TestStopWaitsForHandoffs(t *testing.T) {
	cfg := openSQLite(t)
	release := make(chan struct{})
	cut := make(chan error, 1)
	q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
		if thread == "cut" {
			<-ctx.Done()
			cut <- ctx.Err()
			return Result{Outcome: Done}, ctx.Err()
		}
		<-release
		return Result{Outcome: Done}, nil
	})
	ctx := context.Background()
	if _, err := q.EnqueueWith(ctx, "t", "slow", noop); err != nil {
		t.Fatal(err)
	}
	take(t, visits)
	stopped := make(chan error, 1)
	go func() { stopped <- q.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a hand-off ran", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := take(t, stopped); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	cfg2 := openSQLite(t)
	q2, visits2 := handoffQueue(t, cfg2, func(ctx context.Context, n int32, thread string) (Result, error) {
		<-ctx.Done()
		cut <- ctx.Err()
		return Result{Outcome: Done}, ctx.Err()
	})
	if _, err := q2.EnqueueWith(ctx, "t", "cut", noop); err != nil {
		t.Fatal(err)
	}
	take(t, visits2)
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := q2.Stop(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop past its deadline: %v, want the deadline's error", err)
	}
	if err := take(t, cut); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut Advance saw %v, want its context cancelled", err)
	}
	if jobs := jobsOf(t, q2, "cut"); len(jobs) != 1 || jobs[0].State != rivertype.JobStateScheduled {
		t.Fatalf("the cut hand-off left the jobs %v, want its scheduled job for River", states(jobs))
	}
	// After Stop, EnqueueWith no longer hands off.
	if q2.hand.acquire() {
		t.Fatal("a stopped queue still hands jobs off")
	}
}

// noVisit fails the test when Advance is called within d.
func noVisit(t *testing.T, visits <-chan visit, d time.Duration) {
	t.Helper()
	select {
	case v := <-visits:
		t.Fatalf("an unexpected Advance call; the jobs were %v", states(v.jobs))
	case <-time.After(d):
	}
}

// On SQLite a hand-off's insert does not wake River's producer: its fetch
// (a write transaction, JobGetAvailable) could find nothing, the row
// being scheduled a window ahead, and it held the write lock while the
// run's first write waited. A plain Enqueue still wakes it.
func TestHandoffInsertWakesNoFetch(t *testing.T) {
	cfg := openSQLite(t)
	cfg.FetchPollInterval = time.Minute // no periodic fetch inside the test
	q, visits := handoffQueue(t, cfg, func(context.Context, int32, string) (Result, error) {
		return Result{Outcome: Done}, nil
	})
	time.Sleep(300 * time.Millisecond) // River's fetches at start
	var fetches atomic.Int32
	stop := sqltrace.Observe(func(e sqltrace.Event) {
		if e.Kind == sqltrace.Statement && strings.Contains(e.SQL, "attempt = river_job.attempt + 1") {
			fetches.Add(1)
		}
	})
	defer stop()
	if stored, err := q.EnqueueWith(context.Background(), "t", "handed", noop); err != nil || !stored {
		t.Fatalf("EnqueueWith: %v, %v", stored, err)
	}
	if v := take(t, visits); !v.handedOff() {
		t.Fatalf("Advance found the jobs %v, want the one scheduled job never fetched", states(v.jobs))
	}
	waitNoJobs(t, q, "handed")
	time.Sleep(100 * time.Millisecond)
	if n := fetches.Load(); n != 0 {
		t.Errorf("a hand-off's insert was followed by %d fetches by River, want none", n)
	}
	if err := q.Enqueue(context.Background(), "t", "plain"); err != nil {
		t.Fatal(err)
	}
	take(t, visits)
	if fetches.Load() == 0 {
		t.Error("a plain Enqueue's job ran with no fetch seen: the test does not see River's fetches")
	}
}
