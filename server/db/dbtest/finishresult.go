package dbtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testFinishWithResult: FinishRunWithResult (db.ResultFinisher) ends the
// run, frees its lease and stores the thread's result in one transaction:
// the returned run and thread are as stored; values left out keep the
// thread's; a lease that no longer holds the run (finished, taken over)
// changes neither the run nor the thread.
func testFinishWithResult(t *testing.T, d db.DB) {
	rf, isRF := d.(db.ResultFinisher)
	if !isRF {
		t.Skip("the DB does not finish runs with their thread's result (db.ResultFinisher)")
	}
	ten := tenant(t, "fr")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	l := claim(t, d, ten, "r", "w")
	before := time.Now().Add(-time.Second)
	run, th, p, err := rf.FinishRunWithResult(bg(), l, db.RunSuccess, json.RawMessage(`{"model_calls":2}`), "",
		db.ThreadResult{Status: db.ThreadInterrupted, Values: json.RawMessage(`{"n":1}`), Interrupts: json.RawMessage(`{"task":[{"value":"ask"}]}`)})
	ok(t, "FinishRunWithResult", err)
	if run.ID != "r" || run.ThreadID != "t" || run.Status != db.RunSuccess || run.Error != "" {
		t.Errorf("finished run %+v, want r of t, success", run)
	}
	jsonEq(t, "usage", run.Usage, `{"model_calls":2}`)
	if p.Known && (p.Due || !p.Next.IsZero()) {
		t.Errorf("the finish says %+v is pending on a thread with no other run", p)
	}
	if th.ID != "t" || th.Status != db.ThreadInterrupted || th.Error != "" {
		t.Errorf("thread %+v, want t interrupted", th)
	}
	jsonEq(t, "returned values", th.Values, `{"n":1}`)
	jsonEq(t, "returned interrupts", th.Interrupts, `{"task":[{"value":"ask"}]}`)
	within(t, "the thread's update", th.UpdatedAt, before, time.Now().Add(time.Second))
	stored, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	if stored.Status != th.Status || !stored.UpdatedAt.Equal(th.UpdatedAt) {
		t.Errorf("stored thread %+v, want what the finish returned %+v", stored, th)
	}
	jsonEq(t, "stored values", stored.Values, `{"n":1}`)
	if got, err := d.GetRun(bg(), ten, "t", "r"); err != nil || got.Status != db.RunSuccess {
		t.Errorf("stored run %+v (%v), want success", got, err)
	}
	for _, e := range expiredOf(t, d, ten, time.Now().Add(24*time.Hour)) {
		if e.RunID == "r" {
			t.Errorf("the finished run kept its lease %+v", e)
		}
	}

	// The lease ended: a second finish changes nothing.
	_, _, _, err = rf.FinishRunWithResult(bg(), l, db.RunError, nil, "late", db.ThreadResult{Status: db.ThreadError, Values: json.RawMessage(`{"n":2}`), Error: "late"})
	isErr(t, "FinishRunWithResult twice", err, db.ErrLeaseLost)
	after, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	if after.Status != db.ThreadInterrupted || after.Error != "" {
		t.Errorf("a refused finish changed the thread to %+v", after)
	}
	jsonEq(t, "values after a refused finish", after.Values, `{"n":1}`)

	// Values left out keep the thread's; a lease taken over is refused.
	mkRun(t, d, ten, "t", "r2")
	l2 := claim(t, d, ten, "r2", "w")
	_, th, _, err = rf.FinishRunWithResult(bg(), l2, db.RunError, nil, "boom", db.ThreadResult{Status: db.ThreadError, Error: "boom"})
	ok(t, "FinishRunWithResult without values", err)
	if th.Status != db.ThreadError || th.Error != "boom" {
		t.Errorf("thread %+v, want error boom", th)
	}
	jsonEq(t, "values kept", th.Values, `{"n":1}`)
	mkRun(t, d, ten, "t", "r3")
	old, err := d.RenewLease(bg(), claim(t, d, ten, "r3", "w"), time.Millisecond)
	ok(t, "RenewLease", err)
	time.Sleep(5 * time.Millisecond)
	if _, err := d.TakeOver(bg(), old, "w2", time.Minute); err != nil {
		// Renewal kept the expiry as it was: take over what is listed.
		for _, e := range expiredOf(t, d, ten, time.Now()) {
			if e.RunID == "r3" {
				_, err = d.TakeOver(bg(), e, "w2", time.Minute)
			}
		}
		ok(t, "TakeOver", err)
	}
	_, _, _, err = rf.FinishRunWithResult(bg(), old, db.RunSuccess, nil, "", db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{"n":3}`)})
	isErr(t, "FinishRunWithResult with a lease taken over", err, db.ErrLeaseLost)
	if got, err := d.GetThread(bg(), ten, "t"); err != nil || got.Status != db.ThreadBusy {
		t.Errorf("after the refused finish the thread is %+v (%v), want busy with the taken-over run", got.Status, err)
	} else {
		jsonEq(t, "values after the refused finish", got.Values, `{"n":1}`)
	}
}

// testFinishPending: a finish that reads what its thread has pending
// (db.Pending.Known) reads it after the run's end, as PendingAfter would:
// whether a run is due now and the earliest start of those that are not.
func testFinishPending(t *testing.T, d db.DB) {
	rf, isRF := d.(db.ResultFinisher)
	if !isRF {
		t.Skip("the DB does not finish runs with their thread's result (db.ResultFinisher)")
	}
	ten := tenant(t, "fp")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "a")
	la := claim(t, d, ten, "a", "w")
	later := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	_, err := d.CreateRun(bg(), ten, db.Run{ID: "later", ThreadID: "t", AssistantID: "asst", Kwargs: json.RawMessage(`{}`), NotBefore: later})
	ok(t, "CreateRun later", err)
	_, _, p, err := rf.FinishRunWithResult(bg(), la, db.RunSuccess, nil, "", db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{}`)})
	ok(t, "FinishRunWithResult a", err)
	if !p.Known {
		t.Skip("the DB's finish does not read what its thread has pending")
	}
	if p.Due || !p.Next.Equal(later) {
		t.Errorf("after a, with one run delayed to %v: pending %+v, want not due, next at it", later, p)
	}
	mkRun(t, d, ten, "t", "b")
	lb := claim(t, d, ten, "b", "w")
	mkRun(t, d, ten, "t", "c") // due now, pending while b runs
	_, _, p, err = rf.FinishRunWithResult(bg(), lb, db.RunError, nil, "boom", db.ThreadResult{Status: db.ThreadError, Error: "boom"})
	ok(t, "FinishRunWithResult b", err)
	if !p.Known || !p.Due || !p.Next.Equal(later) {
		t.Errorf("after b, with c due and one run delayed to %v: pending %+v, want due, next at it", later, p)
	}
	// Another thread's pending runs are not this one's.
	mkThread(t, d, ten, "u", nil)
	mkRun(t, d, ten, "u", "x")
	lx := claim(t, d, ten, "x", "w")
	_, _, p, err = rf.FinishRunWithResult(bg(), lx, db.RunSuccess, nil, "", db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{}`)})
	ok(t, "FinishRunWithResult x", err)
	if !p.Known || p.Due || !p.Next.IsZero() {
		t.Errorf("after x, alone on its thread: pending %+v, want none", p)
	}
}
