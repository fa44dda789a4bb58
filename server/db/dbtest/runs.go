package dbtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

func testRunCreateGetList(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "other", nil)
	before := time.Now()
	r, err := d.CreateRun(bg(), ten, db.Run{ID: "r1", ThreadID: "t", AssistantID: "asst", Status: db.RunSuccess,
		Metadata: db.Metadata{"m": 1}, Kwargs: json.RawMessage(`{"input":{"x":1},"stream_mode":["values"]}`), MultitaskStrategy: "enqueue", AssistantVersion: 3})
	ok(t, "CreateRun", err)
	after := time.Now()
	if r.ID != "r1" || r.ThreadID != "t" || r.AssistantID != "asst" || r.Status != db.RunPending || r.MultitaskStrategy != "enqueue" {
		t.Errorf("created %+v, want run r1 on thread t of assistant asst, pending (whatever Status says), strategy enqueue", r)
	}
	jsonEq(t, "kwargs", r.Kwargs, `{"input":{"x":1},"stream_mode":["values"]}`)
	jsonEq(t, "metadata", r.Metadata, `{"m":1}`)
	within(t, "CreatedAt", r.CreatedAt, before, after)
	if !r.NotBefore.IsZero() || r.CancelRequested != "" || len(r.Usage) != 0 {
		t.Errorf("created %+v, want no NotBefore, no cancel request, no usage", r)
	}
	got, err := d.GetRun(bg(), ten, "t", "r1")
	ok(t, "GetRun", err)
	if got.ID != "r1" || got.Status != db.RunPending || !got.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("GetRun = %+v, want %+v", got, r)
	}
	if r.AssistantVersion != 3 || got.AssistantVersion != 3 {
		t.Errorf("a run naming assistant version 3: created with %d, read back with %d", r.AssistantVersion, got.AssistantVersion)
	}
	_, err = d.CreateRun(bg(), ten, db.Run{ThreadID: "t", AssistantVersion: -1})
	isErr(t, "CreateRun with assistant version -1", err, db.ErrInvalid)
	_, err = d.GetRun(bg(), ten, "other", "r1")
	isErr(t, "GetRun through another thread", err, db.ErrNotFound)
	_, err = d.CreateRun(bg(), ten, db.Run{ID: "r1", ThreadID: "t"})
	isErr(t, "CreateRun with a taken ID", err, db.ErrConflict)
	_, err = d.CreateRun(bg(), ten, db.Run{ThreadID: "missing"})
	isErr(t, "CreateRun on a missing thread", err, db.ErrNotFound)
	names(t, "CreateRun on a missing thread", err, "missing")

	auto, err := d.CreateRun(bg(), ten, db.Run{ThreadID: "t"})
	ok(t, "CreateRun without ID", err)
	if auto.ID == "" {
		t.Error("a run created without ID has none")
	}
	jsonEq(t, "default kwargs", auto.Kwargs, `{}`)
	if auto.AssistantVersion != 0 {
		t.Errorf("a run naming no assistant version reads back version %d, want 0", auto.AssistantVersion)
	}
	mkRun(t, d, ten, "t", "r3")
	mkRun(t, d, ten, "other", "elsewhere")

	all, err := d.ListRuns(bg(), ten, "t", db.RunQuery{})
	ok(t, "ListRuns", err)
	sameIDs(t, "ListRuns newest first", ids(all, runID), []string{"r3", auto.ID, "r1"})
	page, err := d.ListRuns(bg(), ten, "t", db.RunQuery{Limit: 1, Offset: 1})
	ok(t, "ListRuns paged", err)
	sameIDs(t, "ListRuns limit 1 offset 1", ids(page, runID), []string{auto.ID})

	l := claim(t, d, ten, "r1", "w")
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	done, err := d.ListRuns(bg(), ten, "t", db.RunQuery{Status: db.RunSuccess})
	ok(t, "ListRuns by status", err)
	sameIDs(t, "ListRuns status success", ids(done, runID), []string{"r1"})
	pending, err := d.ListRuns(bg(), ten, "t", db.RunQuery{Status: db.RunPending})
	ok(t, "ListRuns by status", err)
	sameIDs(t, "ListRuns status pending", ids(pending, runID), []string{"r3", auto.ID})
	_, err = d.ListRuns(bg(), ten, "missing", db.RunQuery{})
	isErr(t, "ListRuns of a missing thread", err, db.ErrNotFound)
}

func testRunDelete(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "live")
	mkRun(t, d, ten, "t", "done")
	isErr(t, "DeleteRun of a pending run", d.DeleteRun(bg(), ten, "t", "live"), db.ErrConflict)
	l := claim(t, d, ten, "live", "w")
	isErr(t, "DeleteRun of a running run", d.DeleteRun(bg(), ten, "t", "live"), db.ErrConflict)
	_, err := d.AppendEvents(bg(), l, events("values", 0, 2))
	ok(t, "AppendEvents", err)
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	isErr(t, "DeleteRun through another thread", d.DeleteRun(bg(), ten, "nope", "live"), db.ErrNotFound)
	ok(t, "DeleteRun", d.DeleteRun(bg(), ten, "t", "live"))
	_, err = d.GetRun(bg(), ten, "t", "live")
	isErr(t, "GetRun after delete", err, db.ErrNotFound)
	_, err = d.ReadEvents(bg(), ten, "live", 0, 0)
	isErr(t, "ReadEvents after delete", err, db.ErrNotFound)
	isErr(t, "DeleteRun twice", d.DeleteRun(bg(), ten, "t", "live"), db.ErrNotFound)
	if _, err := d.GetRun(bg(), ten, "t", "done"); err != nil {
		t.Errorf("deleting one run removed another: %v", err)
	}
}

func testNextPending(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	_, err := d.NextPending(bg(), ten, "t", time.Now())
	isErr(t, "NextPending with no runs", err, db.ErrNotFound)
	now := time.Now()
	_, err = d.CreateRun(bg(), ten, db.Run{ID: "later", ThreadID: "t", NotBefore: now.Add(time.Hour)})
	ok(t, "CreateRun", err)
	mkRun(t, d, ten, "t", "first")
	mkRun(t, d, ten, "t", "second")

	r, err := d.NextPending(bg(), ten, "t", now)
	ok(t, "NextPending", err)
	if r.ID != "first" {
		t.Errorf("NextPending = %q, want first (the oldest due; later is not due)", r.ID)
	}
	l := claim(t, d, ten, "first", "w")
	r, err = d.NextPending(bg(), ten, "t", now)
	ok(t, "NextPending", err)
	if r.ID != "second" {
		t.Errorf("NextPending after claiming first = %q, want second", r.ID)
	}
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	_, err = d.CancelPending(bg(), ten, "t", "second", db.RunInterrupted)
	ok(t, "CancelPending", err)
	_, err = d.NextPending(bg(), ten, "t", now)
	isErr(t, "NextPending with only a delayed run", err, db.ErrNotFound)
	r, err = d.NextPending(bg(), ten, "t", now.Add(2*time.Hour))
	ok(t, "NextPending after the delay", err)
	if r.ID != "later" || !r.NotBefore.Equal(now.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("NextPending two hours on = %q (not before %v), want later (not before %v)", r.ID, r.NotBefore, now.Add(time.Hour))
	}
	_, _, err = d.ClaimRun(bg(), ten, "later", "w", time.Minute)
	isErr(t, "ClaimRun before NotBefore", err, db.ErrConflict)
}

func testClaim(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "u", nil)
	mkRun(t, d, ten, "t", "r1")
	mkRun(t, d, ten, "t", "r2")
	mkRun(t, d, ten, "u", "r3")
	before := time.Now()
	run, l, err := d.ClaimRun(bg(), ten, "r1", "worker-1", time.Minute)
	ok(t, "ClaimRun", err)
	if run.Status != db.RunRunning || run.ID != "r1" {
		t.Errorf("claimed run %+v, want r1 running", run)
	}
	if l.Tenant != ten || l.RunID != "r1" || l.ThreadID != "t" || l.Owner != "worker-1" || l.Token < 1 {
		t.Errorf("lease %+v, want tenant, run r1, thread t, owner worker-1, a positive token", l)
	}
	within(t, "ExpiresAt", l.ExpiresAt, before.Add(time.Minute), time.Now().Add(time.Minute))
	threadStatus(t, d, ten, "t", db.ThreadBusy)
	threadStatus(t, d, ten, "u", db.ThreadIdle)

	_, _, err = d.ClaimRun(bg(), ten, "r2", "worker-2", time.Minute)
	isErr(t, "ClaimRun of a second run of a busy thread", err, db.ErrBusy)
	_, _, err = d.ClaimRun(bg(), ten, "r1", "worker-2", time.Minute)
	isErr(t, "ClaimRun of a running run", err, db.ErrConflict)
	// Another thread is not blocked.
	_, _, err = d.ClaimRun(bg(), ten, "r3", "worker-2", time.Minute)
	ok(t, "ClaimRun on another thread", err)

	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	threadStatus(t, d, ten, "t", db.ThreadIdle)
	_, _, err = d.ClaimRun(bg(), ten, "r1", "worker-2", time.Minute)
	isErr(t, "ClaimRun of a finished run", err, db.ErrConflict)
	_, l2, err := d.ClaimRun(bg(), ten, "r2", "worker-2", time.Minute)
	ok(t, "ClaimRun once the thread is free", err)
	if l2.RunID != "r2" || l2.Token < 1 {
		t.Errorf("lease %+v, want run r2 with a positive token", l2)
	}
	_, _, err = d.ClaimRun(bg(), ten, "missing", "w", time.Minute)
	isErr(t, "ClaimRun of a missing run", err, db.ErrNotFound)
}

// testClaimConcurrent: two pending runs of one thread, claimed at once by
// two workers: exactly one wins, the other gets ErrBusy. Repeated on
// several threads to give the race a chance.
func testClaimConcurrent(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	for round := range 8 {
		th := fmt.Sprintf("t%d", round)
		mkThread(t, d, ten, th, nil)
		runs := []string{th + "-a", th + "-b"}
		for _, r := range runs {
			mkRun(t, d, ten, th, r)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, r := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _, errs[i] = d.ClaimRun(bg(), ten, r, fmt.Sprintf("w%d", i), time.Minute)
			}()
		}
		close(start)
		wg.Wait()
		won, busy := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, db.ErrBusy):
				busy++
			default:
				t.Errorf("round %d: ClaimRun: %v, want success or ErrBusy", round, err)
			}
		}
		if won != 1 || busy != 1 {
			t.Fatalf("round %d: %d claims won and %d got ErrBusy, want exactly one of each (errors %v)", round, won, busy, errs)
		}
		running, err := d.ListRuns(bg(), ten, th, db.RunQuery{Status: db.RunRunning})
		ok(t, "ListRuns", err)
		if len(running) != 1 {
			t.Errorf("round %d: %d running runs on one thread, want 1", round, len(running))
		}
	}
}

func testFinishRun(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	l := claim(t, d, ten, "r", "w")
	_, err := d.FinishRun(bg(), l, db.RunRunning, nil, "")
	isErr(t, "FinishRun with a live status", err, db.ErrInvalid)
	r, err := d.FinishRun(bg(), l, db.RunError, json.RawMessage(`{"input_tokens":3,"model_calls":1}`), "tool failed")
	ok(t, "FinishRun", err)
	threadStatus(t, d, ten, "t", db.ThreadError) // still busy when the run ended: its outcome is the run's
	// A status recorded before the run ended is kept.
	mkThread(t, d, ten, "u", nil)
	mkRun(t, d, ten, "u", "ru")
	lu := claim(t, d, ten, "ru", "w")
	_, err = d.SetThreadResult(bg(), ten, "u", db.ThreadResult{Status: db.ThreadInterrupted})
	ok(t, "SetThreadResult", err)
	_, err = d.FinishRun(bg(), lu, db.RunInterrupted, nil, "")
	ok(t, "FinishRun", err)
	threadStatus(t, d, ten, "u", db.ThreadInterrupted)
	if r.Status != db.RunError || r.Error != "tool failed" || r.UpdatedAt.Before(r.CreatedAt) {
		t.Errorf("finished run %+v, want status error with its message", r)
	}
	jsonEq(t, "usage", r.Usage, `{"input_tokens":3,"model_calls":1}`)
	got, err := d.GetRun(bg(), ten, "t", "r")
	ok(t, "GetRun", err)
	if got.Status != db.RunError || got.Error != "tool failed" {
		t.Errorf("stored run %+v, want status error", got)
	}
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	isErr(t, "FinishRun twice", err, db.ErrLeaseLost)
	_, err = d.RenewLease(bg(), l, time.Minute)
	isErr(t, "RenewLease after FinishRun", err, db.ErrLeaseLost)
	_, err = d.AppendEvents(bg(), l, events("values", 0, 1))
	isErr(t, "AppendEvents after FinishRun", err, db.ErrLeaseLost)
	// The thread is free for the next run.
	mkRun(t, d, ten, "t", "next")
	claim(t, d, ten, "next", "w")
}

func testCancel(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "p")
	mkRun(t, d, ten, "t", "q")
	r, err := d.CancelPending(bg(), ten, "t", "p", db.RunInterrupted)
	ok(t, "CancelPending", err)
	if r.Status != db.RunInterrupted {
		t.Errorf("cancelled run status %q, want interrupted", r.Status)
	}
	_, err = d.CancelPending(bg(), ten, "t", "p", db.RunInterrupted)
	isErr(t, "CancelPending of an ended run", err, db.ErrConflict)
	_, _, err = d.ClaimRun(bg(), ten, "p", "w", time.Minute)
	isErr(t, "ClaimRun of a cancelled run", err, db.ErrConflict)
	_, err = d.CancelPending(bg(), ten, "t", "q", db.RunPending)
	isErr(t, "CancelPending to a live status", err, db.ErrInvalid)

	l := claim(t, d, ten, "q", "w")
	_, err = d.CancelPending(bg(), ten, "t", "q", db.RunInterrupted)
	isErr(t, "CancelPending of a running run", err, db.ErrConflict)
	r, err = d.RequestCancel(bg(), ten, "t", "q", "rollback")
	ok(t, "RequestCancel", err)
	if r.CancelRequested != "rollback" || r.Status != db.RunRunning {
		t.Errorf("after RequestCancel: %+v, want CancelRequested rollback, still running", r)
	}
	got, err := d.GetRun(bg(), ten, "t", "q")
	ok(t, "GetRun", err)
	if got.CancelRequested != "rollback" {
		t.Errorf("stored CancelRequested %q, want rollback", got.CancelRequested)
	}
	_, err = d.RequestCancel(bg(), ten, "t", "q", "explode")
	isErr(t, "RequestCancel with an unknown action", err, db.ErrInvalid)
	_, err = d.FinishRun(bg(), l, db.RunInterrupted, nil, "")
	ok(t, "FinishRun", err)
	_, err = d.RequestCancel(bg(), ten, "t", "q", "interrupt")
	isErr(t, "RequestCancel of an ended run", err, db.ErrConflict)

	mkRun(t, d, ten, "t", "pend")
	r, err = d.RequestCancel(bg(), ten, "t", "pend", "interrupt")
	ok(t, "RequestCancel of a pending run", err)
	if r.CancelRequested != "interrupt" || r.Status != db.RunPending {
		t.Errorf("after RequestCancel of a pending run: %+v, want CancelRequested interrupt, still pending", r)
	}
	_, err = d.RequestCancel(bg(), ten, "t", "missing", "interrupt")
	isErr(t, "RequestCancel of a missing run", err, db.ErrNotFound)
}

// threadStatus checks a thread's status: busy while one of its runs is
// running.
func threadStatus(t *testing.T, d db.DB, ten, thread string, want db.ThreadStatus) {
	t.Helper()
	th, err := d.GetThread(bg(), ten, thread)
	ok(t, "GetThread", err)
	if th.Status != want {
		t.Errorf("thread %s is %s, want %s", thread, th.Status, want)
	}
}
