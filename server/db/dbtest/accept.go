package dbtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// testAcceptTx: CreateRunTx, the accept of a run in the caller's
// transaction, on each path a backend may fold into one statement: a new
// thread it creates (idle, its metadata, no TTL, the run and its
// pre-claim in), a thread asked to be created that exists (left as it
// is, its expiry moved when it has a TTL), a thread that must exist
// (ErrNotFound when it does not), and a taken run ID (ErrConflict
// whether or not the thread is new). A run's thread without a TTL keeps
// no expiry and its update time; runs are numbered in creation order.
func testAcceptTx(t *testing.T, d db.DB) {
	creator, isTx := d.(db.TxRunCreator)
	txr, isRunner := d.(TxRunner)
	if !isTx || !isRunner {
		t.Skip("the DB creates no runs in the caller's transaction (db.TxRunCreator, dbtest.TxRunner)")
	}
	ten := tenant(t, "acc")
	kw := json.RawMessage(`{"input":{"n":1}}`)
	accept := func(p *txhook.PreClaim, thread *db.Thread, r db.Run) (db.Run, error) {
		t.Helper()
		ctx := bg()
		if p != nil {
			ctx = txhook.WithPreClaim(ctx, p)
		}
		var out db.Run
		err := txr.InTx(ctx, func(tx any) error {
			var err error
			out, err = creator.CreateRunTx(ctx, tx, ten, thread, r)
			return err
		})
		return out, err
	}

	// A new thread: created with the run and its pre-claim.
	until := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	p := &txhook.PreClaim{Owner: "me", Until: until}
	before := time.Now()
	run, err := accept(p, &db.Thread{ID: "new", Metadata: db.Metadata{"graph_id": "g"}},
		db.Run{ID: "r1", ThreadID: "new", AssistantID: "asst", Kwargs: kw, Metadata: db.Metadata{"m": 1}, MultitaskStrategy: "reject"})
	ok(t, "CreateRunTx with a new thread", err)
	after := time.Now()
	if run.ID != "r1" || run.ThreadID != "new" || run.AssistantID != "asst" || run.Status != db.RunPending || run.MultitaskStrategy != "reject" {
		t.Errorf("created %+v, want run r1 on thread new of assistant asst, pending, strategy reject", run)
	}
	jsonEq(t, "the run's metadata", run.Metadata, `{"m":1}`)
	jsonEq(t, "the run's kwargs", run.Kwargs, string(kw))
	within(t, "the run's CreatedAt", run.CreatedAt, before, after)
	if !run.UpdatedAt.Equal(run.CreatedAt) {
		t.Errorf("the new run was updated at %v, created at %v", run.UpdatedAt, run.CreatedAt)
	}
	if got := p.Runs(); len(got) != 1 || got[0] != (txhook.RunKey{Tenant: ten, RunID: "r1"}) {
		t.Errorf("pre-claims written: %v, want r1's", got)
	}
	if l, isLease := leaseNamed(t, d, ten, "r1"); !isLease || l.Owner != "me" || l.Token != 0 || !l.ExpiresAt.Equal(until) {
		t.Errorf("r1's lease is %+v (%v), want its pre-claim: owner me, token 0, expiring at %v", l, isLease, until)
	}
	th, err := d.GetThread(bg(), ten, "new")
	ok(t, "GetThread of the new thread", err)
	if th.Status != db.ThreadIdle || th.TTL != nil || !th.ExpiresAt.IsZero() || th.Error != "" || len(th.Values) != 0 {
		t.Errorf("the new thread is %+v, want idle, no TTL nor expiry, no error nor values", th)
	}
	jsonEq(t, "the new thread's metadata", th.Metadata, `{"graph_id":"g"}`)
	within(t, "the new thread's CreatedAt", th.CreatedAt, before, after)
	if !th.UpdatedAt.Equal(th.CreatedAt) {
		t.Errorf("the new thread was updated at %v, created at %v", th.UpdatedAt, th.CreatedAt)
	}

	// The thread asked to be created exists now: it is left as it is (no
	// TTL: no expiry), the run stored after the first.
	second, err := accept(nil, &db.Thread{ID: "new", Metadata: db.Metadata{"graph_id": "other"}}, db.Run{ThreadID: "new", AssistantID: "asst", Kwargs: kw})
	ok(t, "CreateRunTx with a thread to create that exists", err)
	th2, err := d.GetThread(bg(), ten, "new")
	ok(t, "GetThread", err)
	jsonEq(t, "the existing thread's metadata", th2.Metadata, `{"graph_id":"g"}`)
	if !th2.UpdatedAt.Equal(th.UpdatedAt) || !th2.ExpiresAt.IsZero() {
		t.Errorf("a run on a thread without TTL changed its update time to %v (was %v) or its expiry to %v", th2.UpdatedAt, th.UpdatedAt, th2.ExpiresAt)
	}
	// On a thread that must exist, too.
	third, err := accept(nil, nil, db.Run{ThreadID: "new", AssistantID: "asst", Kwargs: kw})
	ok(t, "CreateRunTx on an existing thread", err)
	listed, err := d.ListRuns(bg(), ten, "new", db.RunQuery{})
	ok(t, "ListRuns", err)
	sameIDs(t, "the runs newest first", ids(listed, runID), []string{third.ID, second.ID, "r1"})

	// A thread with a TTL: each run moves its expiry on, whether it was
	// asked to be created or must exist.
	ttl, err := d.CreateThread(bg(), ten, db.Thread{ID: "ttl", TTL: &db.TTL{Duration: time.Hour, Strategy: db.TTLDelete}}, db.IfExistsRaise)
	ok(t, "CreateThread with a TTL", err)
	for i, thread := range []*db.Thread{{ID: "ttl"}, nil} {
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		_, err := accept(nil, thread, db.Run{ThreadID: "ttl", AssistantID: "asst", Kwargs: kw})
		ok(t, "CreateRunTx on a thread with a TTL", err)
		got, err := d.GetThread(bg(), ten, "ttl")
		ok(t, "GetThread", err)
		within(t, "the expiry after a run", got.ExpiresAt, start.Add(time.Hour), time.Now().Add(time.Hour))
		if !got.ExpiresAt.After(ttl.ExpiresAt) || got.TTL == nil || *got.TTL != *ttl.TTL || !got.UpdatedAt.Equal(ttl.UpdatedAt) {
			t.Errorf("run %d: the thread is %+v, want its expiry after %v, its TTL and update time as they were (%+v)", i, got, ttl.ExpiresAt, ttl)
		}
		ttl = got
	}

	// A thread that must exist and does not: nothing is stored.
	_, err = accept(nil, nil, db.Run{ID: "lost", ThreadID: "missing", AssistantID: "asst", Kwargs: kw})
	isErr(t, "CreateRunTx on a missing thread", err, db.ErrNotFound)
	names(t, "CreateRunTx on a missing thread", err, "missing")
	_, err = d.GetRun(bg(), ten, "", "lost")
	isErr(t, "GetRun of the run refused for its missing thread", err, db.ErrNotFound)

	// A taken run ID, on a thread that exists and on one to create: the
	// thread is not created either (the caller rolls back).
	p2 := &txhook.PreClaim{Owner: "me", Until: until}
	_, err = accept(p2, nil, db.Run{ID: "r1", ThreadID: "ttl", AssistantID: "asst", Kwargs: kw})
	isErr(t, "CreateRunTx with a taken run ID", err, db.ErrConflict)
	_, err = accept(p2, &db.Thread{ID: "fresh"}, db.Run{ID: "r1", ThreadID: "fresh", AssistantID: "asst", Kwargs: kw})
	isErr(t, "CreateRunTx with a new thread and a taken run ID", err, db.ErrConflict)
	if len(p2.Runs()) != 0 {
		t.Errorf("refused accepts wrote the pre-claims %v", p2.Runs())
	}
	_, err = d.GetThread(bg(), ten, "fresh")
	isErr(t, "GetThread of the thread whose run was refused", err, db.ErrNotFound)
	if r, err := d.GetRun(bg(), ten, "", "r1"); err != nil || r.ThreadID != "new" {
		t.Errorf("run r1 is %+v (%v), want it still on thread new", r, err)
	}
	got, err := d.GetThread(bg(), ten, "ttl")
	ok(t, "GetThread", err)
	if !got.ExpiresAt.Equal(ttl.ExpiresAt) {
		t.Errorf("a refused run moved its thread's expiry from %v to %v", ttl.ExpiresAt, got.ExpiresAt)
	}

	// The new thread must be the run's.
	_, err = accept(nil, &db.Thread{ID: "a"}, db.Run{ThreadID: "b", AssistantID: "asst", Kwargs: kw})
	isErr(t, "CreateRunTx with another thread to create", err, db.ErrInvalid)
}
