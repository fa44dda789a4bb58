package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// foldService is e's service with JoinStepWrites, on e's database.
func foldService(t *testing.T, e *env, d db.DB) *Service {
	t.Helper()
	svc, err := New(Config{DB: d, Saver: e.saver, Graphs: e.reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond, JoinStepWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// runOutcome is what a client sees of a finished run: its status and
// error, the thread's status, values and interrupts, the events' names
// and the last values event.
type runOutcome struct {
	Status, Error, ThreadStatus, Values, Interrupts, LastValues string
	Events                                                      []string
}

var hexID = regexp.MustCompile(`[0-9a-f]{32}`)

func outcome(t *testing.T, e *env, thread, runID string) runOutcome {
	t.Helper()
	r := e.run("acme", thread, runID)
	th, err := e.db.GetThread(context.Background(), "acme", thread)
	if err != nil {
		t.Fatal(err)
	}
	// Interrupt IDs are drawn from checkpoint IDs.
	o := runOutcome{Status: string(r.Status), Error: r.Error, ThreadStatus: string(th.Status), Values: string(th.Values), Interrupts: hexID.ReplaceAllString(string(th.Interrupts), "ID")}
	for _, ev := range e.events("acme", runID) {
		o.Events = append(o.Events, ev.Event)
		if ev.Event == "values" {
			o.LastValues = string(ev.Data)
		}
	}
	return o
}

// A run that completes commits its last checkpoint, its last events, its
// end and the thread's result in one transaction, and ends exactly as
// without the fold: the same run and thread status, values, interrupts
// and events. A run that stops at an interrupt, and one resumed from it,
// end as before too.
func TestLastStepCommitsWithFinish(t *testing.T) {
	// Observed from the start: the saver prepares its statements when it
	// opens.
	rec := sqltrace.NewRecorder()
	stop := sqltrace.Observe(rec.Observe)
	defer stop()
	e := newEnv(t)
	plain := e.svc
	folded := foldService(t, e, e.db)
	kw := Kwargs{Input: []byte(`{"log":["start"]}`), StreamMode: []string{"values", "updates"}}
	ask := Kwargs{Input: []byte(`{"log":["ask"]}`), StreamMode: []string{"values", "updates"}}
	var got, want []runOutcome
	for _, c := range []struct {
		svc    *Service
		thread string
		out    *[]runOutcome
	}{{plain, "plain", &want}, {folded, "folded", &got}} {
		e.svc = c.svc
		// An update alone may make the run's only checkpoint its last:
		// the claim, the step and the end then commit together.
		update := Kwargs{Command: &Command{Update: []byte(`{"log":["more"]}`)}, StreamMode: []string{"values"}}
		for _, k := range []Kwargs{kw, ask, {Command: &Command{Resume: []byte(`"fine"`)}, StreamMode: []string{"values"}}, kw, update} {
			r := e.mustCreate("acme", c.thread, "chat-a", k, "")
			rec.Take()
			if res := e.advance("acme", c.thread); res != Idle {
				t.Fatalf("%s: advance = %v, want Idle", c.thread, res)
			}
			txs := rec.Take()
			o := outcome(t, e, c.thread, r.ID)
			*c.out = append(*c.out, o)
			if c.svc != folded || o.Status != string(db.RunSuccess) {
				continue
			}
			// The run's end is in the transaction of its last checkpoint.
			var last sqltrace.Tx
			for _, tx := range txs {
				if tx.Wrote() && slices.ContainsFunc(tx.Stmts, func(s sqltrace.Stmt) bool { return strings.Contains(s.SQL, "INSERT INTO checkpoints") }) {
					last = tx
				}
			}
			if !slices.ContainsFunc(last.Stmts, func(s sqltrace.Stmt) bool { return strings.Contains(s.SQL, "UPDATE trellis_runs SET status") }) {
				t.Errorf("run %d: the last checkpoint's transaction does not finish the run: %v", len(*c.out), last.Stmts)
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("runs end differently with the fold (-without +with):\n%s", d)
	}
}

// finishFailing is a DB whose run finish inside the saver's transaction
// fails the first time: as a lost lease, or as a database error.
type finishFailing struct {
	db.DB
	err   error
	calls int
}

func (f *finishFailing) FinishRunWithResultTx(ctx context.Context, tx any, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, db.Pending, error) {
	f.calls++
	fin := f.DB.(db.TxResultFinisher)
	run, th, p, err := fin.FinishRunWithResultTx(ctx, tx, l, status, usage, errMsg, r)
	if err == nil && f.calls == 1 {
		// Its statements ran: the failure undoes them with the step.
		err = f.err
	}
	return run, th, p, err
}

func (f *finishFailing) FinishRunWithResult(ctx context.Context, l db.Lease, status db.RunStatus, usage json.RawMessage, errMsg string, r db.ThreadResult) (db.Run, db.Thread, db.Pending, error) {
	return f.DB.(db.ResultFinisher).FinishRunWithResult(ctx, l, status, usage, errMsg, r)
}

func (f *finishFailing) AppendEventsTx(ctx context.Context, tx any, l db.Lease, evs []db.Event) ([]db.Event, error) {
	return f.DB.(db.TxEvents).AppendEventsTx(ctx, tx, l, evs)
}

func (f *finishFailing) ClaimRunTx(ctx context.Context, tx any, tenant, runID, owner string, ttl time.Duration) (db.Run, db.Lease, error) {
	return f.DB.(db.TxClaimer).ClaimRunTx(ctx, tx, tenant, runID, owner, ttl)
}

// When the transaction of the last step and the run's end does not
// commit, neither is stored: the thread's latest checkpoint is the step
// before, as after a crash at that moment. A lost lease writes nothing
// more, and the run, taken over, replays that step and ends as a run
// that never failed. Another failure ends the run as failed, with the
// thread's values of its last stored step.
func TestLastStepFoldFailsWhole(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kw := Kwargs{Input: []byte(`{"log":["start"]}`), StreamMode: []string{"values"}}

	// The same run without the fold, for what it should end with.
	r := e.mustCreate("acme", "plain", "chat-a", kw, "")
	e.advance("acme", "plain")
	want := outcome(t, e, "plain", r.ID)

	lost := &finishFailing{DB: e.db, err: db.ErrLeaseLost}
	e.svc = foldService(t, e, lost)
	r = e.mustCreate("acme", "lost", "chat-a", kw, "")
	e.advance("acme", "lost")
	if got := e.run("acme", "lost", r.ID); got.Status != db.RunRunning {
		t.Fatalf("after the lost lease the run is %s, want running (nothing written)", got.Status)
	}
	head, err := e.saver.Get(ctx, checkpoint.Ref{ThreadID: ThreadKey("acme", "lost")})
	if err != nil {
		t.Fatal(err)
	}
	if next := head.Checkpoint.Next; len(next) != 1 || next[0].Node != "route" {
		t.Fatalf("the thread's latest checkpoint runs %v next, want the last step (route) still to run", next)
	}
	// Taken over once the lease has expired.
	expired, err := e.db.ExpiredLeases(ctx, time.Now().Add(time.Minute), 0)
	if err != nil || len(expired) != 1 {
		t.Fatalf("expired leases %v, %v", expired, err)
	}
	lease, err := e.db.TakeOver(ctx, expired[0], "alive", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claimed := e.run("acme", "lost", r.ID)
	if err := e.svc.Execute(ctx, lease, claimed); err != nil {
		t.Fatal(err)
	}
	got := outcome(t, e, "lost", r.ID)
	if got.Status != want.Status || got.ThreadStatus != want.ThreadStatus || got.Values != want.Values || got.LastValues != want.LastValues {
		t.Errorf("the run taken over ends as %+v, want %+v", got, want)
	}

	boom := errors.New("the disk is full")
	e.svc = foldService(t, e, &finishFailing{DB: e.db, err: boom})
	r = e.mustCreate("acme", "failing", "chat-a", kw, "")
	e.advance("acme", "failing")
	failed := outcome(t, e, "failing", r.ID)
	if failed.Status != string(db.RunError) || !strings.Contains(failed.Error, boom.Error()) || failed.ThreadStatus != string(db.ThreadError) || failed.Events[len(failed.Events)-1] != "error" {
		t.Errorf("the run whose last write failed: %+v; want it failed with the cause, the thread in error, an error event last", failed)
	}
	head, err = e.saver.Get(ctx, checkpoint.Ref{ThreadID: ThreadKey("acme", "failing")})
	if err != nil {
		t.Fatal(err)
	}
	if next := head.Checkpoint.Next; len(next) != 1 || next[0].Node != "route" {
		t.Errorf("after the failed write the thread's latest checkpoint runs %v next, want route", next)
	}
	r = e.mustCreate("acme", "failing", "chat-a", kw, "")
	e.advance("acme", "failing")
	if o := outcome(t, e, "failing", r.ID); o.Status != string(db.RunSuccess) || o.ThreadStatus != string(db.ThreadIdle) {
		t.Errorf("the next run on the thread: %+v, want success", o)
	}
}

// The end hooks of a run that completes (the queue's job completion, the
// online samples) run in its last transaction after every other statement
// of it, the events of its last step included: a hook marks its work done
// only when nothing but the commit can still fail. The finish runs before
// the events' append (it reserves their Seqs), so its hooks must wait.
func TestLastStepEndHooksRunLast(t *testing.T) {
	e := newEnv(t)
	e.svc = foldService(t, e, e.db)
	kw := Kwargs{Input: []byte(`{"log":["start"]}`), StreamMode: []string{"values", "updates"}}
	r := e.mustCreate("acme", "hooked", "chat-a", kw, "")
	var (
		calls   int
		inTx    int
		endedAs db.RunStatus
	)
	ctx := txhook.WithEnd(context.Background(), func(ctx context.Context, tx any) error {
		calls++
		if run, ok := txhook.Ended(ctx).(db.Run); ok {
			endedAs = run.Status
		}
		return tx.(*sql.Tx).QueryRowContext(ctx, `SELECT count(*) FROM trellis_run_events WHERE tenant = ? AND run_id = ?`, "acme", r.ID).Scan(&inTx)
	})
	if res, err := e.svc.Advance(ctx, "acme", "hooked"); err != nil || res != Idle {
		t.Fatalf("advance = %v, %v; want Idle", res, err)
	}
	stored := len(e.events("acme", r.ID))
	if calls != 1 || endedAs != db.RunSuccess {
		t.Fatalf("the end hooks ran %d times, for a run ended %q; want once, for a run ended success", calls, endedAs)
	}
	if stored == 0 || inTx != stored {
		t.Errorf("the end hooks saw %d of the run's events in its transaction; %d were committed with it: they ran before the events' append", inTx, stored)
	}
}
