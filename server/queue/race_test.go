package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
)

// thread is a simulated thread of the run service: requests are numbered,
// a request is "recorded" before Enqueue, and Advance reads the latest
// request. At most one Advance works on a thread at a time (like the runs
// table's one-running-run index); another finds it Busy.
type thread struct {
	requested atomic.Int64
	seen      atomic.Int64
	running   atomic.Bool
	changed   chan struct{}
}

func newThreads(n int) threads {
	ths := make(threads, n)
	for i := range ths {
		ths[i] = &thread{changed: make(chan struct{}, 1)}
	}
	return ths
}

// advance reads the thread's latest request and returns (after up to hold),
// so the job is completing while the test records the next request.
func (th *thread) advance(hold time.Duration) Result {
	if !th.running.CompareAndSwap(false, true) {
		return Result{Outcome: Busy, After: time.Millisecond}
	}
	r := th.requested.Load()
	for {
		s := th.seen.Load()
		if r <= s || th.seen.CompareAndSwap(s, r) {
			break
		}
	}
	select {
	case th.changed <- struct{}{}:
	default:
	}
	if hold > 0 {
		time.Sleep(time.Duration(rand.Int64N(int64(hold))))
	}
	th.running.Store(false)
	return Result{Outcome: Done}
}

// waitSeen waits until Advance has read request n.
func (th *thread) waitSeen(n int64, within time.Duration) bool {
	deadline := time.After(within)
	for th.seen.Load() < n {
		select {
		case <-th.changed:
		case <-deadline:
			return false
		}
	}
	return true
}

// The race the queue's deduplication must survive: request n+1 is recorded
// and enqueued right after Advance read request n, while that job is still
// completing. A queue that merged the new request into the running job
// would strand it: nothing would ever read it. Every request must be read.
func TestEnqueueWhileCompletingIsNeverStranded(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ths := newThreads(6)
		cfg := b.open(t)
		cfg.Advance = ths.advance(0)
		hammer(t, []*Queue{start(t, cfg)}, ths, 150)
	})
}

// The same with two queues on one PostgreSQL schema (two processes) and
// Advance calls that hold the thread a little, so that jobs often find it
// busy and snooze in one process, then run again in the other: a snooze
// remembered by one process must not make it trust a job that the other
// is now completing.
func TestNeverStrandedAcrossProcesses(t *testing.T) {
	ths := newThreads(6)
	cfg := openPostgres(t)
	cfg.Advance = ths.advance(5 * time.Millisecond)
	cfg.BusySnooze = time.Millisecond
	second := cfg
	hammer(t, []*Queue{start(t, cfg), start(t, second)}, ths, 100)
}

// The same with hand-offs: a request may find the thread's job worked by a
// goroutine of this process (or of the other process, on PostgreSQL),
// and must still be read.
func TestHandoffsAreNeverStranded(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ths := newThreads(6)
		cfg := b.open(t)
		cfg.Advance = ths.advance(time.Millisecond)
		cfg.BusySnooze = time.Millisecond
		hammerWith(t, []*Queue{start(t, cfg)}, ths, 150, true)
	})
	t.Run("two processes", func(t *testing.T) {
		ths := newThreads(6)
		cfg := openPostgres(t)
		cfg.Advance = ths.advance(5 * time.Millisecond)
		cfg.BusySnooze = time.Millisecond
		second := cfg
		hammerWith(t, []*Queue{start(t, cfg), start(t, second)}, ths, 100, true)
	})
}

type threads []*thread

// advance is an AdvanceFunc over the threads "race-<i>" that holds a
// thread for up to hold.
func (ths threads) advance(hold time.Duration) AdvanceFunc {
	return func(_ context.Context, _, id string) (Result, error) {
		var i int
		if _, err := fmt.Sscanf(id, "race-%d", &i); err != nil || i < 0 || i >= len(ths) {
			return Result{}, fmt.Errorf("unknown thread %q", id)
		}
		return ths[i].advance(hold), nil
	}
}

// hammer records and enqueues rounds requests per thread, through the
// queues in turn, each as soon as the previous one was read, and fails the
// test when one is never read.
func hammer(t *testing.T, queues []*Queue, ths threads, rounds int64) {
	hammerWith(t, queues, ths, rounds, false)
}

// hammerWith is hammer; with handoffs, every other request goes through
// EnqueueWith, so that it is handed off when it inserts its job.
func hammerWith(t *testing.T, queues []*Queue, ths threads, rounds int64, handoffs bool) {
	var wg sync.WaitGroup
	errs := make(chan error, len(ths))
	for i, th := range ths {
		wg.Go(func() {
			id := fmt.Sprintf("race-%d", i)
			for n := int64(1); n <= rounds; n++ {
				th.requested.Store(n)
				q := queues[int(n)%len(queues)]
				var err error
				if handoffs && n%2 == 1 {
					_, err = q.EnqueueWith(context.Background(), "t", id, claimOnly(fmt.Sprintf("%s-%d", id, n)))
				} else {
					err = q.Enqueue(context.Background(), "t", id)
				}
				if err != nil {
					errs <- err
					return
				}
				if !th.waitSeen(n, 10*time.Second) {
					errs <- fmt.Errorf("%s: request %d was stranded: Advance last read request %d", id, n, th.seen.Load())
					return
				}
				if rand.IntN(4) == 0 {
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// While a thread is busy, repeated requests do not pile up jobs: the
// running one and a waiting one (which snoozes) stand for all of them. When the running Advance ends
// with More, the waiting job runs at once (its snooze is cut short) and
// finds the thread free.
func TestWaitingJobsAreDeduplicated(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		release := make(chan struct{})
		started := make(chan struct{})
		var calls, busy atomic.Int32
		freeCall := make(chan struct{}, 10)
		var running atomic.Bool
		cfg := b.open(t)
		cfg.Advance = func(context.Context, string, string) (Result, error) {
			n := calls.Add(1)
			if n == 1 {
				running.Store(true)
				close(started)
				<-release
				running.Store(false)
				return Result{Outcome: More}, nil
			}
			if running.Load() {
				busy.Add(1)
				return Result{Outcome: Busy, After: time.Hour}, nil
			}
			freeCall <- struct{}{}
			return Result{Outcome: Done}, nil
		}
		q := start(t, cfg)
		ctx := context.Background()
		if err := q.Enqueue(ctx, "t", "dedup"); err != nil {
			t.Fatal(err)
		}
		<-started
		for range 20 {
			if err := q.Enqueue(ctx, "t", "dedup"); err != nil {
				t.Fatal(err)
			}
		}
		// Let the waiting job run (and snooze) if it has not yet.
		deadline := time.Now().Add(wait)
		for busy.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		live := 0
		for _, j := range jobsOf(t, q, "dedup") {
			if j.State != rivertype.JobStateCompleted {
				live++
			}
		}
		t.Logf("%d live jobs, %d Advance calls", live, calls.Load())
		if live > 3 {
			for _, j := range jobsOf(t, q, "dedup") {
				t.Logf("job %d %s %s attempted=%v due in %s", j.ID, j.EncodedArgs, j.State, j.AttemptedAt != nil, time.Until(j.ScheduledAt))
			}
			t.Errorf("%d live jobs after 21 requests on a busy thread, want at most 3 (the running one and the waiting one, plus one if a request came while the waiting one was checking)", live)
		}
		if n := calls.Load(); n > 42 {
			t.Errorf("%d Advance calls for 21 requests", n)
		}
		close(release)
		select {
		case <-freeCall:
		case <-time.After(2 * time.Second):
			t.Fatal("after the running job ended with More, no job advanced the free thread within 2s (a 1h snooze was not cut short)")
		}
	})
}

// EnqueueTx's job exists only if the transaction commits, and a job
// enqueued in a transaction is not merged into a waiting one (which could
// run before the commit).
func TestEnqueueTxFollowsTheTransaction(t *testing.T) {
	calls := make(chan call, 10)
	cfg := openPostgres(t)
	cfg.Advance = func(_ context.Context, tenant, thread string) (Result, error) {
		calls <- call{tenant, thread, time.Now()}
		return Result{Outcome: Done}, nil
	}
	q := start(t, cfg)
	ctx := context.Background()
	inTx := func(commit bool) {
		t.Helper()
		err := pgx.BeginFunc(ctx, cfg.Postgres, func(tx pgx.Tx) error {
			if err := q.EnqueueTx(ctx, tx, "t", "tx-thread"); err != nil {
				return err
			}
			// Nothing runs before the commit.
			none(t, calls, 200*time.Millisecond)
			if !commit {
				return errRollback
			}
			return nil
		})
		if err != nil && err != errRollback {
			t.Fatal(err)
		}
	}
	inTx(false)
	none(t, calls, 300*time.Millisecond)
	if jobs := jobsOf(t, q, "tx-thread"); len(jobs) != 0 {
		t.Fatalf("a rolled-back EnqueueTx left jobs %v", states(jobs))
	}
	inTx(true)
	if c := recv(t, calls, wait); c.thread != "tx-thread" {
		t.Fatalf("call for %q", c.thread)
	}
	if err := q.EnqueueTx(ctx, nil, "t", "x"); err == nil {
		t.Error("EnqueueTx accepted a nil transaction")
	}
}

var errRollback = fmt.Errorf("roll back")
