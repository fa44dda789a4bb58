package dbtest

import (
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// expiredThreadsOf lists the expired threads of tenant ten at now (the method
// spans tenants; other subtests' rows are ignored).
func expiredThreadsOf(t *testing.T, d db.DB, ten string, now time.Time) []string {
	t.Helper()
	all, err := d.ExpiredThreads(bg(), now, 1000)
	ok(t, "ExpiredThreads", err)
	var out []string
	for _, e := range all {
		if e.Tenant == ten {
			out = append(out, e.ThreadID+":"+e.Strategy)
		}
	}
	return out
}

// A thread's TTL is stored; its expiry is counted from its last
// activity; expired idle threads are listed longest expired first and
// expired by their strategy only while still expired and idle.
func testThreadTTL(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	hour := &db.TTL{Duration: time.Hour, Strategy: db.TTLDelete}
	before := time.Now()
	del, err := d.CreateThread(bg(), ten, db.Thread{ID: "del", TTL: hour}, db.IfExistsRaise)
	ok(t, "CreateThread with a TTL", err)
	if del.TTL == nil || *del.TTL != *hour {
		t.Fatalf("TTL = %+v, want %+v", del.TTL, hour)
	}
	within(t, "ExpiresAt", del.ExpiresAt, before.Add(time.Hour), time.Now().Add(time.Hour))
	time.Sleep(2 * time.Millisecond)
	keep, err := d.CreateThread(bg(), ten, db.Thread{ID: "keep", TTL: &db.TTL{Duration: time.Hour, Strategy: db.TTLKeepLatest}}, db.IfExistsRaise)
	ok(t, "CreateThread keep_latest", err)
	none := mkThread(t, d, ten, "none", nil)
	if none.TTL != nil || !none.ExpiresAt.IsZero() {
		t.Errorf("a thread without TTL has TTL %+v, expiry %v", none.TTL, none.ExpiresAt)
	}
	if got := expiredThreadsOf(t, d, ten, time.Now()); len(got) != 0 {
		t.Errorf("expired now: %v, want none", got)
	}
	later := time.Now().Add(2 * time.Hour)
	sameIDs(t, "expired in two hours", expiredThreadsOf(t, d, ten, later), []string{"del:delete", "keep:keep_latest"})

	// Activity moves the expiry on: a metadata update, a new run.
	time.Sleep(2 * time.Millisecond)
	up, err := d.UpdateThreadMetadata(bg(), ten, "del", db.Metadata{"x": 1})
	ok(t, "UpdateThreadMetadata", err)
	if !up.ExpiresAt.After(del.ExpiresAt) {
		t.Errorf("a metadata update left the expiry at %v (was %v)", up.ExpiresAt, del.ExpiresAt)
	}
	sameIDs(t, "expired after the update moved del's expiry", expiredThreadsOf(t, d, ten, later), []string{"keep:keep_latest", "del:delete"})
	mkRun(t, d, ten, "keep", "r1")
	k, err := d.GetThread(bg(), ten, "keep")
	ok(t, "GetThread", err)
	if !k.ExpiresAt.After(keep.ExpiresAt) {
		t.Errorf("a new run left the expiry at %v (was %v)", k.ExpiresAt, keep.ExpiresAt)
	}
	// A thread with a pending run is never expired.
	sameIDs(t, "expired with a pending run on keep", expiredThreadsOf(t, d, ten, later), []string{"del:delete"})
	if _, done, err := d.ExpireThread(bg(), ten, "keep", later); err != nil || done {
		t.Errorf("ExpireThread of a thread with a pending run: %v, %v; want nothing done", done, err)
	}
	_, err = d.CancelPending(bg(), ten, "keep", "r1", db.RunInterrupted)
	ok(t, "CancelPending", err)
	sameIDs(t, "expired after the run ended", expiredThreadsOf(t, d, ten, later), []string{"del:delete", "keep:keep_latest"})
	if got, err := d.ExpiredThreads(bg(), later, 1); err != nil || len(got) != 1 {
		t.Errorf("ExpiredThreads limit 1: %d rows, %v", len(got), err)
	}

	// Not yet expired: nothing done.
	if _, done, err := d.ExpireThread(bg(), ten, "del", time.Now()); err != nil || done {
		t.Errorf("ExpireThread before the expiry: %v, %v", done, err)
	}
	// delete deletes the row with its runs.
	mkRun(t, d, ten, "del", "r2")
	_, err = d.CancelPending(bg(), ten, "del", "r2", db.RunInterrupted)
	ok(t, "CancelPending", err)
	strategy, done, err := d.ExpireThread(bg(), ten, "del", later)
	if err != nil || !done || strategy != db.TTLDelete {
		t.Fatalf("ExpireThread(del) = %q, %v, %v", strategy, done, err)
	}
	_, err = d.GetThread(bg(), ten, "del")
	isErr(t, "GetThread of an expired deleted thread", err, db.ErrNotFound)
	_, err = d.GetRun(bg(), ten, "del", "r2")
	isErr(t, "GetRun of an expired deleted thread", err, db.ErrNotFound)
	if _, done, err := d.ExpireThread(bg(), ten, "del", later); err != nil || done {
		t.Errorf("ExpireThread of a gone thread: %v, %v", done, err)
	}
	// keep_latest keeps the row and clears its expiry until the next
	// activity.
	strategy, done, err = d.ExpireThread(bg(), ten, "keep", later)
	if err != nil || !done || strategy != db.TTLKeepLatest {
		t.Fatalf("ExpireThread(keep) = %q, %v, %v", strategy, done, err)
	}
	k, err = d.GetThread(bg(), ten, "keep")
	ok(t, "GetThread after keep_latest", err)
	if !k.ExpiresAt.IsZero() || k.TTL == nil {
		t.Errorf("after keep_latest: expiry %v, TTL %+v; want no expiry, the TTL kept", k.ExpiresAt, k.TTL)
	}
	if got := expiredThreadsOf(t, d, ten, later); len(got) != 0 {
		t.Errorf("expired after the sweep: %v", got)
	}
	res, err := d.SetThreadResult(bg(), ten, "keep", db.ThreadResult{Status: db.ThreadIdle})
	ok(t, "SetThreadResult", err)
	if res.ExpiresAt.IsZero() {
		t.Error("a state update did not set the expiry again")
	}

	// SetThreadTTL sets and clears; a copy keeps the TTL.
	before = time.Now()
	set, err := d.SetThreadTTL(bg(), ten, "none", &db.TTL{Duration: 30 * time.Minute, Strategy: db.TTLKeepLatest})
	ok(t, "SetThreadTTL", err)
	if set.TTL == nil || set.TTL.Duration != 30*time.Minute || set.TTL.Strategy != db.TTLKeepLatest {
		t.Errorf("SetThreadTTL: TTL %+v", set.TTL)
	}
	within(t, "ExpiresAt after SetThreadTTL", set.ExpiresAt, before.Add(30*time.Minute), time.Now().Add(30*time.Minute))
	cp, err := d.CopyThread(bg(), ten, "none", "copy")
	ok(t, "CopyThread", err)
	if cp.TTL == nil || *cp.TTL != *set.TTL || cp.ExpiresAt.IsZero() {
		t.Errorf("copy: TTL %+v, expiry %v; want the TTL and an expiry", cp.TTL, cp.ExpiresAt)
	}
	cleared, err := d.SetThreadTTL(bg(), ten, "none", nil)
	ok(t, "SetThreadTTL(nil)", err)
	if cleared.TTL != nil || !cleared.ExpiresAt.IsZero() {
		t.Errorf("cleared: TTL %+v, expiry %v", cleared.TTL, cleared.ExpiresAt)
	}
	_, err = d.SetThreadTTL(bg(), ten, "missing", nil)
	isErr(t, "SetThreadTTL of a missing thread", err, db.ErrNotFound)
	for _, bad := range []*db.TTL{{Duration: 0, Strategy: db.TTLDelete}, {Duration: time.Hour, Strategy: "archive"}} {
		_, err = d.SetThreadTTL(bg(), ten, "none", bad)
		isErr(t, "SetThreadTTL with a bad TTL", err, db.ErrInvalid)
		_, err = d.CreateThread(bg(), ten, db.Thread{TTL: bad}, db.IfExistsRaise)
		isErr(t, "CreateThread with a bad TTL", err, db.ErrInvalid)
	}
	_, err = d.ExpiredThreads(bg(), later, 0)
	isErr(t, "ExpiredThreads limit 0", err, db.ErrInvalid)
}
