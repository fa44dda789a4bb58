package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
)

// acceptPreClaimed stores a pending run of the echo graph on a new thread
// with its pre-claim, as a hand-off's accept does, owned by a process that
// then died (no goroutine, no job): until is the pre-claim's expiry.
func acceptPreClaimed(t *testing.T, r *running, thread string, until time.Time) db.Run {
	t.Helper()
	ctx := context.Background()
	pc := &txhook.PreClaim{Owner: "dead-process", Until: until}
	creator := r.s.st.db.(db.TxRunCreator)
	var run db.Run
	store := func(tx any) error {
		var err error
		run, err = creator.CreateRunTx(txhook.WithPreClaim(ctx, pc), tx, api.DefaultTenant, &db.Thread{ID: thread, Status: db.ThreadIdle},
			db.Run{ThreadID: thread, AssistantID: DefaultAssistantID("echo"), Kwargs: json.RawMessage(`{"input":{"log":["pre"]}}`)})
		return err
	}
	if r.s.st.river != nil {
		tx, err := r.s.st.river.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := store(tx); err != nil {
			t.Fatal(errors.Join(err, tx.Rollback()))
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	} else {
		tx, err := r.s.st.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := store(tx); err != nil {
			t.Fatal(errors.Join(err, tx.Rollback(ctx)))
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := pc.Runs(); len(got) != 1 || got[0].RunID != run.ID {
		t.Fatalf("the accept wrote the pre-claims %v, want run %s's", got, run.ID)
	}
	return run
}

// leaseOf is the run's lease, as ExpiredLeases lists it at the far future;
// ok false when it has none.
func leaseOf(t *testing.T, d db.DB, runID string) (db.Lease, bool) {
	t.Helper()
	all, err := d.ExpiredLeases(context.Background(), time.Now().Add(24*time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.RunID == runID {
			return l, true
		}
	}
	return db.Lease{}, false
}

// A run accepted by a process that handed it to itself and died before
// its claim (its pre-claim left, no job) is not executed by the sweeper
// as a taken-over run, and not before the pre-claim expires: the sweeper
// enqueues its thread once it has, the run runs through the queue, and
// no lease is left after it. A pre-claim whose run was cancelled while
// pending is only removed.
func TestDeadHandoffRunsAfterItsPreClaim(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			database := filepath.Join(t.TempDir(), "t.db")
			if backend == "postgres" {
				database, _, _ = pgSchema(t, "preclaim")
			}
			r := start(t, Config{Database: database, SweepInterval: 50 * time.Millisecond}, nil)
			d := r.s.st.db
			const window = 600 * time.Millisecond
			began := time.Now()
			run := acceptPreClaimed(t, r, "orphan", began.Add(window))
			l, ok := leaseOf(t, d, run.ID)
			if !ok || l.Token != 0 || l.Owner != "dead-process" {
				t.Fatalf("the pre-claim is %+v (%v), want token 0 of the dead process", l, ok)
			}
			got := waitRun(t, d, "orphan", run.ID)
			if got.Status != db.RunSuccess {
				t.Fatalf("the orphaned run ended %s %s, want success", got.Status, got.Error)
			}
			if took := time.Since(began); took < window {
				t.Errorf("the orphaned run ran %s after its accept, before its pre-claim expired (%s)", took, window)
			}
			if l, ok := leaseOf(t, d, run.ID); ok {
				t.Errorf("the run left the lease %+v", l)
			}
			th, err := d.GetThread(context.Background(), api.DefaultTenant, "orphan")
			if err != nil || th.Status != db.ThreadIdle {
				t.Errorf("the thread is %s (%v), want idle", th.Status, err)
			}

			cancelled := acceptPreClaimed(t, r, "cancelled", time.Now().Add(window))
			if _, err := d.CancelPending(context.Background(), api.DefaultTenant, "cancelled", cancelled.ID, db.RunInterrupted); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, ok := leaseOf(t, d, cancelled.ID); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the cancelled run's pre-claim was never removed")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got, err := d.GetRun(context.Background(), api.DefaultTenant, "cancelled", cancelled.ID); err != nil || got.Status != db.RunInterrupted {
				t.Fatalf("the cancelled run is %s (%v), want it left interrupted", got.Status, err)
			}
		})
	}
}

// A run another process holds the live pre-claim of (it may be executing
// the run before its claim) is not executed here, even when a request for
// its thread arrives here and this process's hand-off advances the thread:
// the claim is refused until the pre-claim expires, then the run runs
// once, and the request's own run after it.
func TestForeignPreClaimHoldsTheRun(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			database := filepath.Join(t.TempDir(), "t.db")
			if backend == "postgres" {
				database, _, _ = pgSchema(t, "foreignpc")
			}
			r := start(t, Config{Database: database, SweepInterval: 50 * time.Millisecond}, nil)
			d := r.s.st.db
			const window = time.Second
			began := time.Now()
			held := acceptPreClaimed(t, r, "shared", began.Add(window))
			code, body, _ := post(t, r.url+"/threads/shared/runs", `{"assistant_id":"echo","input":{"log":["second"]},"multitask_strategy":"enqueue"}`)
			if code != 200 {
				t.Fatalf("second run: %d %s", code, body)
			}
			var second db.Run
			if err := json.Unmarshal([]byte(body), &struct {
				ID *string `json:"run_id"`
			}{&second.ID}); err != nil || second.ID == "" {
				t.Fatalf("second run: %s (%v)", body, err)
			}
			got := waitRun(t, d, "shared", held.ID)
			if got.Status != db.RunSuccess {
				t.Fatalf("the pre-claimed run ended %s %s, want success", got.Status, got.Error)
			}
			if took := time.Since(began); took < window {
				t.Errorf("the run another process pre-claimed ran here %s after its accept, before its pre-claim expired (%s)", took, window)
			}
			if got := waitRun(t, d, "shared", second.ID); got.Status != db.RunSuccess {
				t.Fatalf("the second run ended %s %s, want success", got.Status, got.Error)
			}
		})
	}
}
