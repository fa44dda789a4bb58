package runs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/server/db"
)

// joinedService is the env's service with JoinStepWrites and hooks.
func joinedService(t *testing.T, e *env, hooks Hooks) {
	t.Helper()
	svc, err := New(Config{DB: e.db, Saver: e.saver, Graphs: e.reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond, JoinStepWrites: true, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
}

// With JoinStepWrites a run is claimed in the transaction of its first
// checkpoint: no write transaction holds the claim alone.
func TestClaimCommitsWithTheFirstStep(t *testing.T) {
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	e := newEnv(t)
	joinedService(t, e, Hooks{})
	r := e.mustCreate("acme", "claimed", "chat-a", in(`{"log":["start"]}`), "")
	rec.Take()
	if got := e.advance("acme", "claimed"); got != Idle {
		t.Fatalf("advance = %v, want Idle", got)
	}
	txs := rec.Take()
	stop()
	if r = e.run("acme", "claimed", r.ID); r.Status != db.RunSuccess {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	claims := 0
	for _, tx := range txs {
		if !tx.Wrote() {
			continue
		}
		var claim, cp bool
		for _, st := range tx.Stmts {
			claim = claim || strings.Contains(st.SQL, "SET status = 'running'")
			cp = cp || strings.Contains(st.SQL, "INSERT INTO checkpoints")
		}
		if claim {
			claims++
			if !cp {
				t.Errorf("the run's claim committed without a checkpoint:\n%s", sqltrace.Breakdown([]sqltrace.Tx{tx}, nil, 120))
			}
		}
	}
	if claims != 1 {
		t.Errorf("%d write transactions claim the run, want 1", claims)
	}
}

// A run cancelled while a worker executes it before its claim is not that
// worker's: its first write fails to claim it and is rolled back, the
// attempt ends without finishing the run (the cancel did), and nothing of
// it is stored: no checkpoint, no event.
func TestUnclaimedAttemptWritesNothing(t *testing.T) {
	e := newEnv(t)
	var run db.Run
	joinedService(t, e, Hooks{Start: func(ctx context.Context, _ RunInfo) (context.Context, func(db.RunStatus, error)) {
		// Another request stops the run before its first step commits.
		if _, err := e.db.CancelPending(ctx, "acme", "dropped", run.ID, db.RunInterrupted); err != nil {
			t.Errorf("cancel the pending run: %v", err)
		}
		return ctx, func(db.RunStatus, error) {}
	}})
	run = e.mustCreate("acme", "dropped", "chat-a", in(`{"log":["start"]}`), "")
	if got := e.advance("acme", "dropped"); got != More {
		t.Fatalf("advance = %v, want More (the run was not this worker's)", got)
	}
	if r := e.run("acme", "dropped", run.ID); r.Status != db.RunInterrupted {
		t.Fatalf("status %s, want interrupted (by the cancel, not by the worker)", r.Status)
	}
	if evs := e.events("acme", run.ID); len(evs) != 0 {
		t.Fatalf("the unclaimed attempt stored %d events", len(evs))
	}
	_, err := e.saver.Get(context.Background(), checkpoint.Ref{ThreadID: ThreadKey("acme", "dropped")})
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("the unclaimed attempt stored a checkpoint (Get: %v)", err)
	}
	select {
	case n := <-e.ran:
		t.Fatalf("node %s ran in the unclaimed attempt", n)
	default:
	}
	if got := e.advance("acme", "dropped"); got != Idle {
		t.Fatalf("advance after = %v, want Idle", got)
	}
}
