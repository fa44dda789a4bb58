package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// handedOff reports whether the call ran as a hand-off: the thread has no
// job row at all.
func (v visit) handedOff() bool { return len(v.jobs) == 0 }

// fetched reports whether the call ran as River's job: the thread's one
// row is running.
func (v visit) fetched() bool {
	return len(v.jobs) == 1 && v.jobs[0].State == rivertype.JobStateRunning
}

// preClaimsDDL is the test's stand-in for the service's lease table.
const preClaimsDDL = `CREATE TABLE test_preclaims (run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_ms BIGINT NOT NULL)`

// preClaimStore is the test's stand-in for the service's store: it writes
// a pre-claim row as the run service's CreateRunTx does and renews it.
type preClaimStore struct {
	cfg      Config
	renewed  atomic.Int32
	claimed  sync.Map // run ID -> true: renewals report it claimed
	released sync.Map // run ID -> owner: ReleasePreClaim was called
}

func newPreClaims(t *testing.T, cfg Config) *preClaimStore {
	t.Helper()
	var err error
	if cfg.SQLite != nil {
		_, err = cfg.SQLite.Exec(preClaimsDDL)
	} else {
		_, err = cfg.Postgres.Exec(context.Background(), preClaimsDDL)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &preClaimStore{cfg: cfg}
}

func (s *preClaimStore) args() string {
	if s.cfg.SQLite != nil {
		return "?, ?, ?"
	}
	return "$1, $2, $3"
}

// accept is an EnqueueWith function storing a run runID, with its
// pre-claim when asked.
func (s *preClaimStore) accept(runID string) txFunc {
	return func(ctx context.Context, tx any) error {
		p := txhook.PreClaimOf(ctx)
		if p == nil {
			return nil
		}
		if err := execIn(ctx, tx, `INSERT INTO test_preclaims VALUES (`+s.args()+`)`, runID, p.Owner, p.Until.UnixMilli()); err != nil {
			return err
		}
		p.Wrote("t", runID)
		return nil
	}
}

// RenewPreClaim is PreClaimRenewer's.
func (s *preClaimStore) RenewPreClaim(ctx context.Context, tenant, runID, owner string, until time.Time) (bool, error) {
	s.renewed.Add(1)
	if _, ok := s.claimed.Load(runID); ok {
		return false, nil
	}
	return true, nil
}

// ReleasePreClaim is PreClaimRenewer's: it records the call.
func (s *preClaimStore) ReleasePreClaim(ctx context.Context, tenant, runID, owner string) (bool, error) {
	s.released.Store(runID, owner)
	return true, nil
}

// expiry is the run's pre-claim's owner and expiry; ok false when none.
func (s *preClaimStore) expiry(t *testing.T, runID string) (owner string, at time.Time, ok bool) {
	t.Helper()
	var ms int64
	var err error
	q := `SELECT owner, expires_ms FROM test_preclaims WHERE run_id = ` + placeholder(s.cfg)
	if s.cfg.SQLite != nil {
		err = s.cfg.SQLite.QueryRow(q, runID).Scan(&owner, &ms)
	} else {
		err = s.cfg.Postgres.QueryRow(context.Background(), q, runID).Scan(&owner, &ms)
	}
	if err != nil {
		if strings.Contains(err.Error(), "no rows") {
			return "", time.Time{}, false
		}
		t.Fatal(err)
	}
	return owner, time.UnixMilli(ms), true
}

// claimOnly is an EnqueueWith function that only records a pre-claim, with
// no row: for tests that need the hand-off and nothing of the store.
func claimOnly(runID string) txFunc {
	return func(ctx context.Context, _ any) error {
		if p := txhook.PreClaimOf(ctx); p != nil {
			p.Wrote("t", runID)
		}
		return nil
	}
}

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

// A run EnqueueWith accepts with its pre-claim is worked here with no River
// job at all: the accept writes no row of river_job, the pre-claim names
// this process and expires a window ahead, and River never calls Advance
// for the thread.
func TestHandoffRunsWithoutAJob(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.Owner = "me"
		pcs := newPreClaims(t, cfg)
		q, visits := handoffQueue(t, cfg, func(context.Context, int32, string) (Result, error) {
			return Result{Outcome: Done}, nil
		})
		var jobWrites atomic.Int32
		stop := sqltrace.Observe(func(e sqltrace.Event) {
			if e.Kind == sqltrace.Statement && strings.Contains(e.SQL, "INSERT INTO") && strings.Contains(e.SQL, "river_job") {
				jobWrites.Add(1)
			}
		})
		began := time.Now()
		stored, err := q.EnqueueWith(context.Background(), "t", "plain", pcs.accept("run-1"))
		stop()
		if err != nil || !stored {
			t.Fatalf("EnqueueWith: %v, %v", stored, err)
		}
		if b.name == "sqlite" && jobWrites.Load() != 0 {
			t.Errorf("the accept ran %d statements on river_job, want none", jobWrites.Load())
		}
		owner, until, ok := pcs.expiry(t, "run-1")
		if !ok || owner != "me" || until.Before(began.Add(cfg.HandoffWindow)) || until.After(time.Now().Add(DefaultHandoffWindow)) {
			t.Fatalf("the pre-claim is %q until %s (%v), want ours a window ahead", owner, until, ok)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("Advance found the jobs %v, want none", states(v.jobs))
		}
		waitFreeSlots(t, q, q.cfg.Handoffs)
		noVisit(t, visits, 300*time.Millisecond)
		if jobs := jobsOf(t, q, "plain"); len(jobs) != 0 {
			t.Fatalf("the hand-off left the jobs %v, want none", states(jobs))
		}
	})
}

// A function that writes no pre-claim (it stored no run that may start
// now) gets a River job in its transaction: the run is insured as before.
func TestHandoffWithoutAPreClaimQueuesAJob(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		createMarks(t, cfg)
		q, visits := handoffQueue(t, cfg, func(context.Context, int32, string) (Result, error) {
			return Result{Outcome: Done}, nil
		})
		mark := func(ctx context.Context, tx any) error {
			return execIn(ctx, tx, `INSERT INTO folds_marks (thread) VALUES (`+placeholder(cfg)+`)`, "nopc")
		}
		if stored, err := q.EnqueueWith(context.Background(), "t", "nopc", mark); err != nil || !stored {
			t.Fatalf("EnqueueWith: %v, %v", stored, err)
		}
		if v := take(t, visits); !v.fetched() {
			t.Fatalf("Advance found the jobs %v, want the one job River fetched", states(v.jobs))
		}
		if n := countMarks(t, cfg, "nopc"); n != 1 {
			t.Fatalf("%d rows of the function stored, want 1", n)
		}
		waitFreeSlots(t, q, q.cfg.Handoffs)
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
		if _, err := q.EnqueueWith(ctx, "t", "held", claimOnly("r1")); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("the first run was not handed off: %v", states(v.jobs))
		}
		if _, err := q.EnqueueWith(ctx, "t", "other", claimOnly("r2")); err != nil {
			t.Fatal(err)
		}
		v := take(t, visits)
		close(hold)
		if !v.fetched() {
			t.Fatalf("with the slot taken the run went as %v, want one job River fetched", states(v.jobs))
		}
		waitFreeSlots(t, q, 1)
		if _, err := q.EnqueueWith(ctx, "t", "third", claimOnly("r3")); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("after the slot was freed the run was not handed off: %v", states(v.jobs))
		}
	})
}

// A process that dies after the commit never runs its goroutine: what is
// left is the run's pre-claim, no job (the service's sweeper enqueues the
// thread when the pre-claim expires: server's TestDeadHandoffRunsAfterItsPreClaim).
func TestHandoffOfADeadProcessLeavesItsPreClaim(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.HandoffWindow = time.Second
		pcs := newPreClaims(t, cfg)
		q, visits := handoffQueue(t, cfg, func(context.Context, int32, string) (Result, error) {
			return Result{Outcome: Done}, nil
		})
		q.hand.mu.Lock()
		q.hand.drop = true
		q.hand.mu.Unlock()
		if _, err := q.EnqueueWith(context.Background(), "t", "orphan", pcs.accept("orphan-run")); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := pcs.expiry(t, "orphan-run"); !ok {
			t.Fatal("the dead hand-off left no pre-claim")
		}
		noVisit(t, visits, 300*time.Millisecond)
		if jobs := jobsOf(t, q, "orphan"); len(jobs) != 0 {
			t.Fatalf("the dead hand-off left the jobs %v, want only its pre-claim", states(jobs))
		}
	})
}

// A hand-off that outlasts a third of its window renews the pre-claims of
// its runs until they are claimed, then no more; River never works the
// thread meanwhile.
func TestHandoffRenewsItsPreClaims(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.HandoffWindow = 300 * time.Millisecond
		pcs := &preClaimStore{cfg: cfg}
		cfg.PreClaims = pcs
		claimed := make(chan struct{})
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if n == 1 {
				<-claimed
			}
			return Result{Outcome: Done}, nil
		})
		if _, err := q.EnqueueWith(context.Background(), "t", "long", claimOnly("long-run")); err != nil {
			t.Fatal(err)
		}
		take(t, visits)
		time.Sleep(450 * time.Millisecond) // a window and a half: four renewals
		if n := pcs.renewed.Load(); n < 2 {
			t.Fatalf("%d renewals in a window and a half, want at least 2", n)
		}
		pcs.claimed.Store("long-run", true)
		time.Sleep(250 * time.Millisecond)
		after := pcs.renewed.Load()
		time.Sleep(250 * time.Millisecond)
		if n := pcs.renewed.Load(); n != after {
			t.Fatalf("renewed %d more times after the run was claimed, want none", n-after)
		}
		close(claimed)
		waitFreeSlots(t, q, q.cfg.Handoffs)
		noVisit(t, visits, 200*time.Millisecond)
		if jobs := jobsOf(t, q, "long"); len(jobs) != 0 {
			t.Fatalf("jobs %v, want none", states(jobs))
		}
	})
}

// A second run accepted for a thread whose hand-off is working is absorbed
// by it (keyed by thread): Advance runs again here after the call in
// progress, with no job and no second slot. A plain Enqueue meanwhile is
// not absorbed (nothing but a job would insure it): it gets a River job.
func TestHandoffAbsorbsASecondAccept(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		hold := make(chan struct{})
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if n == 1 {
				<-hold
			}
			return Result{Outcome: Done}, nil
		})
		ctx := context.Background()
		if _, err := q.EnqueueWith(ctx, "t", "busy", claimOnly("a")); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("not handed off: %v", states(v.jobs))
		}
		if _, err := q.EnqueueWith(ctx, "t", "busy", claimOnly("b")); err != nil {
			t.Fatal(err)
		}
		waitFreeSlots(t, q, q.cfg.Handoffs-1)
		close(hold)
		if v := take(t, visits); !v.handedOff() {
			t.Fatalf("the absorbed accept ran as %v, want a second local Advance", states(v.jobs))
		}
		waitFreeSlots(t, q, q.cfg.Handoffs)
		noVisit(t, visits, 300*time.Millisecond)

		hold2 := make(chan struct{})
		q2, visits2 := handoffQueue(t, b.open(t), func(ctx context.Context, n int32, thread string) (Result, error) {
			if n == 1 {
				<-hold2
			}
			return Result{Outcome: Done}, nil
		})
		if _, err := q2.EnqueueWith(ctx, "t", "plain", claimOnly("c")); err != nil {
			t.Fatal(err)
		}
		take(t, visits2)
		if err := q2.Enqueue(ctx, "t", "plain"); err != nil {
			t.Fatal(err)
		}
		if v := take(t, visits2); !v.fetched() {
			t.Fatalf("a plain Enqueue during a hand-off ran as %v, want River's job", states(v.jobs))
		}
		close(hold2)
		noVisit(t, visits2, 300*time.Millisecond)
	})
}

// Busy waits here and calls Advance again after Result.After, with no
// write; More queues the rest through River and ends the hand-off.
func TestHandoffBusyAndMore(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		const snooze = 200 * time.Millisecond
		cfg := b.open(t)
		pcs := &preClaimStore{cfg: cfg}
		cfg.PreClaims = pcs
		held := make(chan bool, 3)
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			held <- txhook.HeldBy(ctx, "t", "bm")
			switch n {
			case 1:
				return Result{Outcome: Busy, After: snooze}, nil
			case 2:
				return Result{Outcome: More}, nil
			}
			return Result{Outcome: Done}, nil
		})
		if _, err := q.EnqueueWith(context.Background(), "t", "bm", claimOnly("bm")); err != nil {
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
		if third := take(t, visits); !third.fetched() {
			t.Fatalf("the work left by More ran as %v, want River's job", states(third.jobs))
		}
		waitFreeSlots(t, q, q.cfg.Handoffs)
		noVisit(t, visits, 300*time.Millisecond)
		// The hand-off's calls hold the run's pre-claim; River's does not,
		// and the pre-claim was released for it when More gave it the thread.
		if h1, h2, h3 := <-held, <-held, <-held; !h1 || !h2 || h3 {
			t.Errorf("Advance held the pre-claim: %v, %v, %v; want the hand-off's two calls only", h1, h2, h3)
		}
		if owner, ok := pcs.released.Load("bm"); !ok || owner != q.cfg.Owner {
			t.Errorf("the pre-claim was released by %v (%v), want the queue's owner %q after More", owner, ok, q.cfg.Owner)
		}
	})
}

// A hand-off still Busy after half its window goes to River: a job of the
// thread is inserted then (and snoozes as any).
func TestHandoffHandsBackAfterHalfItsWindow(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.open(t)
		cfg.HandoffWindow = 400 * time.Millisecond
		pcs := &preClaimStore{cfg: cfg}
		cfg.PreClaims = pcs
		q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
			if n <= 20 {
				return Result{Outcome: Busy, After: 50 * time.Millisecond}, nil
			}
			return Result{Outcome: Done}, nil
		})
		began := time.Now()
		if _, err := q.EnqueueWith(context.Background(), "t", "wait", claimOnly("w")); err != nil {
			t.Fatal(err)
		}
		local := 0
		var v visit
		for v = take(t, visits); v.handedOff(); v = take(t, visits) {
			local++
		}
		if local < 2 || !v.fetched() {
			t.Fatalf("after %d local calls the thread ran as %v, want River's job after a few local Busy retries", local, states(v.jobs))
		}
		if gap := v.at.Sub(began); gap < cfg.HandoffWindow/2 {
			t.Fatalf("handed back after %s, before half the window", gap)
		}
		waitFreeSlots(t, q, q.cfg.Handoffs)
		if _, ok := pcs.released.Load("w"); !ok {
			t.Error("the hand-back did not release the run's pre-claim for River's job")
		}
	})
}

// Stop waits for a handed-off Advance; a stop deadline cancels it, and
// leaves no job: the run is its lease's or its pre-claim's.
func TestStopWaitsForHandoffs(t *testing.T) {
	cfg := openSQLite(t)
	release := make(chan struct{})
	cut := make(chan error, 1)
	q, visits := handoffQueue(t, cfg, func(ctx context.Context, n int32, thread string) (Result, error) {
		<-release
		return Result{Outcome: Done}, nil
	})
	ctx := context.Background()
	if _, err := q.EnqueueWith(ctx, "t", "slow", claimOnly("slow")); err != nil {
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
	if _, err := q2.EnqueueWith(ctx, "t", "cut", claimOnly("cut")); err != nil {
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
	if jobs := jobsOf(t, q2, "cut"); len(jobs) != 0 {
		t.Fatalf("the cut hand-off left the jobs %v, want none", states(jobs))
	}
	// After Stop, EnqueueWith no longer hands off.
	if q2.hand.acquire() {
		t.Fatal("a stopped queue still hands runs off")
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

// On SQLite a hand-off wakes no River fetch (a write transaction that
// would find nothing and hold the write lock while the run's first write
// waited). A plain Enqueue still wakes it.
func TestHandoffWakesNoFetch(t *testing.T) {
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
	if stored, err := q.EnqueueWith(context.Background(), "t", "handed", claimOnly("h")); err != nil || !stored {
		t.Fatalf("EnqueueWith: %v, %v", stored, err)
	}
	if v := take(t, visits); !v.handedOff() {
		t.Fatalf("Advance found the jobs %v, want none", states(v.jobs))
	}
	time.Sleep(100 * time.Millisecond)
	if n := fetches.Load(); n != 0 {
		t.Errorf("a hand-off was followed by %d fetches by River, want none", n)
	}
	if err := q.Enqueue(context.Background(), "t", "plain"); err != nil {
		t.Fatal(err)
	}
	take(t, visits)
	if fetches.Load() == 0 {
		t.Error("a plain Enqueue's job ran with no fetch seen: the test does not see River's fetches")
	}
}
