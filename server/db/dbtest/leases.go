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

// expiredOf returns the expired leases of tenant at now.
func expiredOf(t *testing.T, d db.DB, ten string, now time.Time) []db.Lease {
	t.Helper()
	all, err := d.ExpiredLeases(bg(), now, 0)
	ok(t, "ExpiredLeases", err)
	var out []db.Lease
	for _, l := range all {
		if l.Tenant == ten {
			out = append(out, l)
		}
	}
	return out
}

func testLeaseRenewExpire(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "u", nil)
	mkRun(t, d, ten, "t", "r1")
	mkRun(t, d, ten, "u", "r2")
	_, l1, err := d.ClaimRun(bg(), ten, "r1", "w1", time.Minute)
	ok(t, "ClaimRun", err)
	_, l2, err := d.ClaimRun(bg(), ten, "r2", "w2", 2*time.Minute)
	ok(t, "ClaimRun", err)

	if got := expiredOf(t, d, ten, time.Now()); len(got) != 0 {
		t.Errorf("leases expired now: %+v, want none", got)
	}
	got := expiredOf(t, d, ten, time.Now().Add(90*time.Second))
	if len(got) != 1 || got[0].RunID != "r1" || got[0].Token != l1.Token || got[0].Owner != "w1" || got[0].ThreadID != "t" ||
		!got[0].ExpiresAt.Equal(l1.ExpiresAt) {
		t.Errorf("leases expired in 90s: %+v, want only r1's %+v", got, l1)
	}
	got = expiredOf(t, d, ten, time.Now().Add(3*time.Minute))
	if len(got) != 2 || got[0].RunID != "r1" || got[1].RunID != "r2" {
		t.Errorf("leases expired in 3m: %+v, want r1 then r2 (soonest expired first)", got)
	}
	lim, err := d.ExpiredLeases(bg(), time.Now().Add(3*time.Minute), 1)
	ok(t, "ExpiredLeases with limit", err)
	if len(lim) != 1 {
		t.Errorf("ExpiredLeases with limit 1 returned %d leases", len(lim))
	}

	r1, err := d.RenewLease(bg(), l1, 10*time.Minute)
	ok(t, "RenewLease", err)
	if !r1.ExpiresAt.After(l1.ExpiresAt.Add(8*time.Minute)) || r1.Token != l1.Token {
		t.Errorf("renewed lease %+v, want the same token expiring about 10 minutes on (was %v)", r1, l1.ExpiresAt)
	}
	got = expiredOf(t, d, ten, time.Now().Add(3*time.Minute))
	if len(got) != 1 || got[0].RunID != "r2" {
		t.Errorf("leases expired in 3m after renewing r1's: %+v, want only r2's", got)
	}
	// Renewing with the same ttl at once still moves the expiry later, so a
	// sweeper holding the older reading cannot take over.
	again, err := d.RenewLease(bg(), r1, 10*time.Minute)
	ok(t, "RenewLease", err)
	if !again.ExpiresAt.After(r1.ExpiresAt) {
		t.Errorf("second renewal expires at %v, want after %v", again.ExpiresAt, r1.ExpiresAt)
	}
	_, err = d.TakeOver(bg(), r1, "thief", time.Minute)
	isErr(t, "TakeOver with the lease as it was before a renewal", err, db.ErrLeaseLost)
	_ = l2
}

// testTakeOverFences: a lease taken over gets a higher token; the old
// holder's fenced writes all fail with ErrLeaseLost, the new holder's
// succeed, and a second sweeper's take-over of the same reading fails.
func testTakeOverFences(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	_, old, err := d.ClaimRun(bg(), ten, "r", "dead", time.Minute)
	ok(t, "ClaimRun", err)
	_, err = d.AppendEvents(bg(), old, events("values", 0, 2))
	ok(t, "AppendEvents", err)

	exp := expiredOf(t, d, ten, time.Now().Add(2*time.Minute))
	if len(exp) != 1 {
		t.Fatalf("expired leases %+v, want r's", exp)
	}
	nl, err := d.TakeOver(bg(), exp[0], "alive", time.Minute)
	ok(t, "TakeOver", err)
	if nl.Token <= old.Token || nl.Owner != "alive" || nl.RunID != "r" || nl.ThreadID != "t" || nl.Tenant != ten {
		t.Errorf("taken-over lease %+v, want owner alive on run r with a token above %d", nl, old.Token)
	}
	_, err = d.TakeOver(bg(), exp[0], "late", time.Minute)
	isErr(t, "a second TakeOver of the same expired lease", err, db.ErrLeaseLost)

	_, err = d.RenewLease(bg(), old, time.Minute)
	isErr(t, "RenewLease by the old holder", err, db.ErrLeaseLost)
	_, err = d.AppendEvents(bg(), old, events("values", 2, 1))
	isErr(t, "AppendEvents by the old holder", err, db.ErrLeaseLost)
	_, err = d.FinishRun(bg(), old, db.RunSuccess, nil, "")
	isErr(t, "FinishRun by the old holder", err, db.ErrLeaseLost)
	names(t, "FinishRun by the old holder", err, "r")

	run, err := d.GetRun(bg(), ten, "t", "r")
	ok(t, "GetRun", err)
	if run.Status != db.RunRunning {
		t.Errorf("run status %q after a fenced FinishRun, want still running", run.Status)
	}
	evs, err := d.AppendEvents(bg(), nl, events("values", 2, 1))
	ok(t, "AppendEvents by the new holder", err)
	if evs[0].Seq != 3 {
		t.Errorf("the new holder's first event has seq %d, want 3 (after the old holder's 2)", evs[0].Seq)
	}
	_, err = d.RenewLease(bg(), nl, time.Minute)
	ok(t, "RenewLease by the new holder", err)
	// A second expiry and take-over: tokens keep growing.
	exp = expiredOf(t, d, ten, time.Now().Add(5*time.Minute))
	if len(exp) != 1 {
		t.Fatalf("expired leases %+v, want r's", exp)
	}
	third, err := d.TakeOver(bg(), exp[0], "third", time.Minute)
	ok(t, "TakeOver", err)
	if third.Token <= nl.Token {
		t.Errorf("third token %d, want above %d", third.Token, nl.Token)
	}
	_, err = d.FinishRun(bg(), nl, db.RunSuccess, nil, "")
	isErr(t, "FinishRun by the second holder", err, db.ErrLeaseLost)
	done, err := d.FinishRun(bg(), third, db.RunSuccess, nil, "")
	ok(t, "FinishRun by the third holder", err)
	if done.Status != db.RunSuccess {
		t.Errorf("status %q, want success", done.Status)
	}
	if got := expiredOf(t, d, ten, time.Now().Add(time.Hour)); len(got) != 0 {
		t.Errorf("leases of a finished run remain: %+v", got)
	}
	_, err = d.TakeOver(bg(), exp[0], "late", time.Minute)
	isErr(t, "TakeOver of a finished run", err, db.ErrLeaseLost)
}

// testTakeOverRace: several sweepers take over one expired lease at once;
// exactly one wins and the others get ErrLeaseLost.
func testTakeOverRace(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	for round := range 4 {
		th := fmt.Sprintf("t%d", round)
		mkThread(t, d, ten, th, nil)
		mkRun(t, d, ten, th, th+"-r")
		claim(t, d, ten, th+"-r", "dead")
		var exp db.Lease
		for _, l := range expiredOf(t, d, ten, time.Now().Add(2*time.Hour)) {
			if l.RunID == th+"-r" {
				exp = l
			}
		}
		if exp.RunID == "" {
			t.Fatalf("round %d: the lease of %s-r is not listed as expired", round, th)
		}
		const sweepers = 4
		errs := make([]error, sweepers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range sweepers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = d.TakeOver(bg(), exp, fmt.Sprintf("s%d", i), time.Minute)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, db.ErrLeaseLost):
				t.Errorf("round %d: TakeOver: %v, want success or ErrLeaseLost", round, err)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d sweepers took the run over, want exactly 1 (errors %v)", round, won, errs)
		}
	}
}

func testPendingThreads(t *testing.T, d db.DB) {
	a, b := tenant(t, "a"), tenant(t, "b")
	for _, th := range []string{"t1", "t2", "t3", "t4"} {
		mkThread(t, d, a, th, nil)
	}
	mkThread(t, d, b, "t1", nil)
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	mkRun(t, d, a, "t1", "r1")
	_, err := d.CreateRun(bg(), a, db.Run{ID: "r2", ThreadID: "t2", AssistantID: "asst", Kwargs: json.RawMessage(`{}`), NotBefore: later})
	ok(t, "CreateRun delayed", err)
	mkRun(t, d, a, "t3", "r3")
	claim(t, d, a, "r3", "w") // running: not pending
	mkRun(t, d, a, "t4", "r4")
	_, err = d.CreateRun(bg(), a, db.Run{ID: "r5", ThreadID: "t4", AssistantID: "asst", Kwargs: json.RawMessage(`{}`), NotBefore: later})
	ok(t, "CreateRun delayed", err)
	mkRun(t, d, b, "t1", "r6")

	// Walk the whole list one row at a time, keeping this test's tenants.
	var got []string
	at, ath := "", ""
	for range 10000 {
		page, err := d.PendingThreads(bg(), at, ath, 1)
		ok(t, "PendingThreads", err)
		if len(page) == 0 {
			break
		}
		p := page[0]
		if p.Tenant < at || (p.Tenant == at && p.ThreadID <= ath) {
			t.Fatalf("PendingThreads after (%s, %s) returned (%s, %s): not after the position", at, ath, p.Tenant, p.ThreadID)
		}
		at, ath = p.Tenant, p.ThreadID
		if p.Tenant != a && p.Tenant != b {
			continue
		}
		start := "now"
		if !p.NotBefore.IsZero() {
			if !p.NotBefore.Equal(later) {
				t.Errorf("thread %s starts at %v, want %v", p.ThreadID, p.NotBefore, later)
			}
			start = "later"
		}
		label := "a"
		if p.Tenant == b {
			label = "b"
		}
		got = append(got, label+"/"+p.ThreadID+"@"+start)
	}
	want := "[a/t1@now a/t2@later a/t4@now b/t1@now]"
	if a > b {
		want = "[b/t1@now a/t1@now a/t2@later a/t4@now]"
	}
	if fmt.Sprint(got) != want {
		t.Errorf("threads with pending runs %v, want %v", got, want)
	}
	if _, err := d.PendingThreads(bg(), "", "", 0); !errors.Is(err, db.ErrInvalid) {
		t.Errorf("PendingThreads with limit 0: %v, want ErrInvalid", err)
	}
}
