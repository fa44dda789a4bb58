package runs

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/server/db"
)

// pendingRead is a distinctive part of NextPendingRun's statement: the
// read of a thread's pending runs that a fresh run skips.
const pendingRead = "EXISTS (SELECT 1 FROM trellis_runs x"

// acceptEnv is an env whose service joins step writes (joinedService)
// and accepts runs in a transaction of its own (acceptInTx), as the
// server's hand-off does.
func acceptEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	joinedService(t, e, Hooks{})
	acceptInTx(t, e)
	return e
}

// acceptInTx makes e's service store runs in a write transaction of the
// same file that it commits itself, as the queue's EnqueueWith does
// (UseTxEnqueuer); it queues nothing.
func acceptInTx(t *testing.T, e *env) {
	t.Helper()
	sdb, err := sqlitedb.Open(context.Background(), e.path, "runs-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	err = e.svc.UseTxEnqueuer(func(ctx context.Context, _, _ string, fn func(ctx context.Context, tx any) error) (bool, error) {
		tx, err := sdb.Write.BeginTx(ctx, nil)
		if err != nil {
			return false, err
		}
		if err := fn(ctx, tx); err != nil {
			_ = tx.Rollback()
			return false, err
		}
		return tx.Commit() == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createTx creates a run as a request does, through the TxEnqueuer.
func (e *env) createTx(thread, strategy string) db.Run {
	e.t.Helper()
	r, err := e.svc.Create(context.Background(), func(context.Context, string, string) error { return nil },
		CreateRequest{Tenant: "acme", ThreadID: thread, AssistantID: "chat-a", Kwargs: in(`{"log":["start"]}`), MultitaskStrategy: strategy, CreateThread: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// pendingReads counts the reads of a thread's pending runs in txs.
func pendingReads(txs []sqltrace.Tx) int {
	n := 0
	for _, tx := range txs {
		for _, st := range tx.Stmts {
			if strings.Contains(st.SQL, pendingRead) {
				n++
			}
		}
	}
	return n
}

// A run accepted on a thread with nothing else live is executed by the
// hand-off's Advance (which holds its pre-claim) without a read of the
// thread's pending runs; the next Advance of the thread reads them.
func TestFreshRunIsNotReadAgain(t *testing.T) {
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	e := acceptEnv(t)
	r := e.createTx("fresh", "")
	rec.Take()
	if got := e.advance("acme", "fresh"); got != Idle {
		t.Fatalf("advance = %v, want Idle", got)
	}
	if n := pendingReads(rec.Take()); n != 0 {
		t.Errorf("the fresh run's Advance read the thread's pending runs %d times, want 0", n)
	}
	if r = e.run("acme", "fresh", r.ID); r.Status != db.RunSuccess {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	if got := e.advance("acme", "fresh"); got != Idle {
		t.Fatalf("a second advance = %v, want Idle", got)
	}
	if n := pendingReads(rec.Take()); n != 1 {
		t.Errorf("the second Advance read the pending runs %d times, want 1 (the note was taken)", n)
	}
}

// A second run accepted while the first is live is not noted: the first
// stays the thread's note, both run in order, each once.
func TestOnlyARunWithNothingLiveIsNoted(t *testing.T) {
	e := acceptEnv(t)
	first := e.createTx("two", "")
	second := e.createTx("two", Enqueue)
	e.svc.mu.Lock()
	noted := e.svc.fresh[threadKey("acme", "two")].run.ID
	e.svc.mu.Unlock()
	if noted != first.ID {
		t.Fatalf("noted run %q, want the first %q (the second had a live run before it)", noted, first.ID)
	}
	if got := e.advance("acme", "two"); got != More {
		t.Fatalf("first advance = %v, want More", got)
	}
	if got := e.advance("acme", "two"); got != Idle {
		t.Fatalf("second advance = %v, want Idle", got)
	}
	for _, r := range []db.Run{first, second} {
		if got := e.run("acme", "two", r.ID); got.Status != db.RunSuccess {
			t.Errorf("run %s: %s (%s)", r.ID, got.Status, got.Error)
		}
	}
	if n := len(e.ran); n != 2 {
		t.Errorf("%d nodes ran, want 2 (one a run)", n)
	}
}

// A noted run cancelled before its Advance is not executed: the cancel
// drops the note, so the Advance reads the thread's pending runs and
// finds none.
func TestFreshRunCancelledBeforeItsAdvance(t *testing.T) {
	e := acceptEnv(t)
	r := e.createTx("gone", "")
	if err := e.svc.Stop(context.Background(), "acme", r, "interrupt"); err != nil {
		t.Fatal(err)
	}
	e.svc.mu.Lock()
	_, noted := e.svc.fresh[threadKey("acme", "gone")]
	e.svc.mu.Unlock()
	if noted {
		t.Error("the cancelled run is still noted for its thread's Advance")
	}
	if res := e.advance("acme", "gone"); res != Idle {
		t.Errorf("advance = %v, want Idle", res)
	}
	if got := e.run("acme", "gone", r.ID); got.Status == db.RunSuccess || got.Status == db.RunPending || got.Status == db.RunRunning {
		t.Errorf("the cancelled run is %s", got.Status)
	}
	if n := len(e.ran); n != 0 {
		t.Errorf("%d nodes of the cancelled run ran", n)
	}
}

// A River job's Advance (no pre-claim held) does not use the note: the
// run is claimed before it executes, as any run it finds.
func TestFreshNoteNeedsTheHeldPreClaim(t *testing.T) {
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	e := acceptEnv(t)
	r := e.createTx("river", "")
	rec.Take()
	res, err := e.svc.Advance(context.Background(), "acme", "river")
	if err != nil || res != Idle {
		t.Fatalf("advance = %v, %v; want Idle", res, err)
	}
	if n := pendingReads(rec.Take()); n != 1 {
		t.Errorf("an unheld Advance read the pending runs %d times, want 1", n)
	}
	if got := e.run("acme", "river", r.ID); got.Status != db.RunSuccess {
		t.Errorf("status %s (%s)", got.Status, got.Error)
	}
}
