package dbtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// TxRunner is implemented by a DB under test that can run fn in a write
// transaction of its own database (committed when fn returns nil), so that
// the suite can call the methods that take the caller's transaction
// (db.TxRunCreator).
type TxRunner interface {
	InTx(ctx context.Context, fn func(tx any) error) error
}

// testPreClaim: CreateRunTx asked for a pre-claim (txhook.WithPreClaim)
// writes a lease of token 0 for the new run, expiring when asked, and
// says so; a run that may not start yet gets none, nor does a call that
// asks for none. RenewPreClaim moves it only for its owner and only until
// the run's claim replaces it; DropLease removes a lease as read, and
// nothing that changed since.
func testPreClaim(t *testing.T, d db.DB) {
	pcs, isPC := d.(db.PreClaimer)
	creator, isTx := d.(db.TxRunCreator)
	txr, isRunner := d.(TxRunner)
	if !isPC || !isTx || !isRunner {
		t.Skip("the DB writes no pre-claims (db.PreClaimer, db.TxRunCreator, dbtest.TxRunner)")
	}
	ten := tenant(t, "pc")
	mkThread(t, d, ten, "t", nil)
	accept := func(p *txhook.PreClaim, r db.Run) db.Run {
		t.Helper()
		ctx := bg()
		if p != nil {
			ctx = txhook.WithPreClaim(ctx, p)
		}
		var out db.Run
		ok(t, "CreateRunTx", txr.InTx(ctx, func(tx any) error {
			var err error
			out, err = creator.CreateRunTx(ctx, tx, ten, nil, r)
			return err
		}))
		return out
	}
	kw := json.RawMessage(`{"input":{"n":1}}`)
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	p := &txhook.PreClaim{Owner: "me", Until: until}
	run := accept(p, db.Run{ThreadID: "t", AssistantID: "asst", Kwargs: kw})
	if got := p.Runs(); len(got) != 1 || got[0] != (txhook.RunKey{Tenant: ten, RunID: run.ID}) {
		t.Fatalf("pre-claims written: %v, want run %s's", got, run.ID)
	}
	if got := expiredOf(t, d, ten, until.Add(-time.Second)); len(got) != 0 {
		t.Errorf("leases expired before the pre-claim's expiry: %+v", got)
	}
	got := expiredOf(t, d, ten, until)
	if len(got) != 1 || got[0].RunID != run.ID || got[0].ThreadID != "t" || got[0].Owner != "me" || got[0].Token != 0 || !got[0].ExpiresAt.Equal(until) {
		t.Fatalf("the pre-claim is %+v, want run %s's of token 0, owned by me, expiring at %v", got, run.ID, until)
	}

	// Renewal: only its owner, and it moves the expiry.
	later := until.Add(time.Minute)
	renewed, err := pcs.RenewPreClaim(bg(), ten, run.ID, "someone else", later)
	if ok(t, "RenewPreClaim by another owner", err); renewed {
		t.Error("another owner renewed the pre-claim")
	}
	renewed, err = pcs.RenewPreClaim(bg(), ten, run.ID, "me", later)
	if ok(t, "RenewPreClaim", err); !renewed {
		t.Error("the owner could not renew its pre-claim")
	}
	if got := expiredOf(t, d, ten, later.Add(-time.Second)); len(got) != 0 {
		t.Errorf("the renewed pre-claim expired before its new expiry: %+v", got)
	}

	// While it lives, no other owner claims the run (its owner may be
	// executing it before its claim): ErrBusy, the run left pending.
	_, _, err = d.ClaimRun(bg(), ten, run.ID, "worker", time.Minute)
	isErr(t, "ClaimRun by another owner under a live pre-claim", err, db.ErrBusy)
	if rl, isRL := d.(db.RunLimiter); isRL {
		_, _, err = rl.ClaimRunWithin(bg(), ten, run.ID, "worker", time.Minute, 100)
		isErr(t, "ClaimRunWithin by another owner under a live pre-claim", err, db.ErrBusy)
	}
	if r, err := d.GetRun(bg(), ten, "t", run.ID); err != nil || r.Status != db.RunPending {
		t.Fatalf("after the refused claims the run is %s (%v), want pending", r.Status, err)
	}

	// Its owner's claim replaces it with a lease; the pre-claim can be
	// renewed no more.
	l := claim(t, d, ten, run.ID, "me")
	if l.Token < 1 {
		t.Errorf("the claim's token is %d, want at least 1", l.Token)
	}
	got = expiredOf(t, d, ten, time.Now().Add(2*time.Hour))
	if len(got) != 1 || got[0].Owner != "me" || got[0].Token != l.Token {
		t.Errorf("after the claim the leases are %+v, want the claim's alone", got)
	}
	renewed, err = pcs.RenewPreClaim(bg(), ten, run.ID, "me", later)
	if ok(t, "RenewPreClaim after the claim", err); renewed {
		t.Error("a claimed run's pre-claim was renewed")
	}
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	if got := expiredOf(t, d, ten, time.Now().Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("after the run's finish the leases are %+v, want none", got)
	}

	// None for a run that may not start yet, nor when none is asked.
	mkThread(t, d, ten, "u", nil)
	p2 := &txhook.PreClaim{Owner: "me", Until: until}
	accept(p2, db.Run{ThreadID: "u", AssistantID: "asst", Kwargs: kw, NotBefore: time.Now().Add(time.Hour)})
	accept(nil, db.Run{ThreadID: "u", AssistantID: "asst", Kwargs: kw})
	if len(p2.Runs()) != 0 {
		t.Errorf("a delayed run got the pre-claims %v, want none", p2.Runs())
	}
	if got := expiredOf(t, d, ten, time.Now().Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("leases %+v, want none for a delayed run or an accept that asked for none", got)
	}

	// DropLease removes a lease as read, not one that changed.
	mkThread(t, d, ten, "v", nil)
	p3 := &txhook.PreClaim{Owner: "dead", Until: time.Now().Add(-time.Second)}
	dropped := accept(p3, db.Run{ThreadID: "v", AssistantID: "asst", Kwargs: kw})
	read := expiredOf(t, d, ten, time.Now())
	if len(read) != 1 || read[0].RunID != dropped.ID {
		t.Fatalf("expired leases %+v, want the dead pre-claim", read)
	}
	stale := read[0]
	stale.ExpiresAt = stale.ExpiresAt.Add(-time.Second)
	isErr(t, "DropLease with another expiry", pcs.DropLease(bg(), stale), db.ErrLeaseLost)
	ok(t, "DropLease", pcs.DropLease(bg(), read[0]))
	isErr(t, "DropLease again", pcs.DropLease(bg(), read[0]), db.ErrLeaseLost)
	if got := expiredOf(t, d, ten, time.Now().Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("leases %+v after the drop, want none", got)
	}
	if r, err := d.GetRun(bg(), ten, "v", dropped.ID); err != nil || r.Status != db.RunPending {
		t.Errorf("the run of the dropped pre-claim is %s (%v), want it still pending", r.Status, err)
	}

	// An expired pre-claim holds nothing: any owner claims the run.
	mkThread(t, d, ten, "w", nil)
	expired := accept(&txhook.PreClaim{Owner: "dead", Until: time.Now().Add(-time.Second)}, db.Run{ThreadID: "w", AssistantID: "asst", Kwargs: kw})
	if l := claim(t, d, ten, expired.ID, "worker"); l.Owner != "worker" || l.Token < 1 {
		t.Errorf("the claim under an expired pre-claim gave %+v", l)
	}

	// ReleasePreClaim: only its owner's, and then any owner claims at once;
	// a claim's lease is not a pre-claim to release.
	mkThread(t, d, ten, "x", nil)
	released := accept(&txhook.PreClaim{Owner: "me", Until: time.Now().Add(time.Minute)}, db.Run{ThreadID: "x", AssistantID: "asst", Kwargs: kw})
	gone, err := pcs.ReleasePreClaim(bg(), ten, released.ID, "someone else")
	if ok(t, "ReleasePreClaim by another owner", err); gone {
		t.Error("another owner released the pre-claim")
	}
	gone, err = pcs.ReleasePreClaim(bg(), ten, released.ID, "me")
	if ok(t, "ReleasePreClaim", err); !gone {
		t.Error("the owner could not release its pre-claim")
	}
	rl := claim(t, d, ten, released.ID, "worker")
	gone, err = pcs.ReleasePreClaim(bg(), ten, released.ID, "worker")
	if ok(t, "ReleasePreClaim of a claim", err); gone {
		t.Error("a claim's lease was released as a pre-claim")
	}
	if l, isLease := leaseNamed(t, d, ten, released.ID); !isLease || l.Token != rl.Token {
		t.Errorf("after releasing nothing the claim's lease is %+v (%v), want token %d", l, isLease, rl.Token)
	}
}

// leaseNamed is the run's lease as ExpiredLeases lists it at the far
// future; false when it has none.
func leaseNamed(t *testing.T, d db.DB, ten, runID string) (db.Lease, bool) {
	t.Helper()
	for _, l := range expiredOf(t, d, ten, time.Now().Add(24*time.Hour)) {
		if l.RunID == runID {
			return l, true
		}
	}
	return db.Lease{}, false
}
