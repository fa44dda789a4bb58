package runs

import (
	"context"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// A run whose pre-claim this process does not hold (a River job's Advance,
// with no txhook.WithHeld) is claimed before it executes, even with
// JoinStepWrites: the hook that starts its execution finds it running
// already, so no other process can be executing it too.
func TestUnheldRunIsClaimedBeforeItExecutes(t *testing.T) {
	e := newEnv(t)
	statuses := make(chan db.RunStatus, 1)
	joinedService(t, e, Hooks{Start: func(ctx context.Context, ri RunInfo) (context.Context, func(db.RunStatus, error)) {
		r, err := e.db.GetRun(ctx, ri.Tenant, ri.ThreadID, ri.RunID)
		if err != nil {
			t.Errorf("read the run as it starts: %v", err)
		}
		statuses <- r.Status
		return ctx, func(db.RunStatus, error) {}
	}})
	r := e.mustCreate("acme", "river", "chat-a", in(`{"log":["start"]}`), "")
	res, err := e.svc.Advance(context.Background(), "acme", "river")
	if err != nil || res != Idle {
		t.Fatalf("advance = %v, %v; want Idle", res, err)
	}
	if got := <-statuses; got != db.RunRunning {
		t.Errorf("the run was %s when its execution started; want running (claimed first)", got)
	}
	if r = e.run("acme", "river", r.ID); r.Status != db.RunSuccess {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	// Held (the hand-off's Advance), the same service executes the run
	// before claiming it.
	r = e.mustCreate("acme", "held", "chat-a", in(`{"log":["start"]}`), "")
	if got := e.advance("acme", "held"); got != Idle {
		t.Fatalf("held advance = %v, want Idle", got)
	}
	if got := <-statuses; got != db.RunPending {
		t.Errorf("a held run was %s when its execution started; want pending (claimed with its first write)", got)
	}
}

// Two Advance calls of one thread in one process (a hand-off and a River
// job) never execute its run both: the second answers Busy while the
// first executes it, claimed or not, and the run's first node runs once.
func TestOneAdvanceOfARunAtATime(t *testing.T) {
	e := newEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	joinedService(t, e, Hooks{Start: func(ctx context.Context, _ RunInfo) (context.Context, func(db.RunStatus, error)) {
		if first {
			first = false
			close(entered)
			<-release
		}
		return ctx, func(db.RunStatus, error) {}
	}})
	r := e.mustCreate("acme", "twice", "chat-a", in(`{"log":["start"]}`), "")
	done := make(chan AdvanceResult, 1)
	go func() {
		res, err := e.svc.Advance(heldCtx(), "acme", "twice")
		if err != nil {
			t.Errorf("first advance: %v", err)
		}
		done <- res
	}()
	<-entered // executing, not claimed yet (held: the claim rides in its first write)
	for _, ctx := range []context.Context{heldCtx(), context.Background()} {
		res, err := e.svc.Advance(ctx, "acme", "twice")
		if err != nil || res != Busy {
			t.Errorf("a second advance while the first executes = %v, %v; want Busy", res, err)
		}
	}
	close(release)
	select {
	case res := <-done:
		if res != Idle {
			t.Errorf("first advance = %v, want Idle", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first advance did not end")
	}
	if r = e.run("acme", "twice", r.ID); r.Status != db.RunSuccess {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	greets := 0
	for len(e.ran) > 0 {
		if <-e.ran == "greet" {
			greets++
		}
	}
	if greets != 1 {
		t.Errorf("the run's first node ran %d times, want 1", greets)
	}
}
