package dbtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testTagThread: CreateTaggedRunTx (db.TxThreadTagger) stores the run and
// sets graph_id and assistant_id in its thread's metadata, keeping the
// other keys and replacing the two when they were set, and moves
// updated_at and a TTL's expiry as UpdateThreadMetadata does; a thread it
// creates is created with the tag; it commits only with its transaction;
// a missing thread is ErrNotFound and stays missing; a thread without a
// TTL gets no expiry.
func testTagThread(t *testing.T, d db.DB) {
	tg, isTagger := d.(db.TxThreadTagger)
	txr, isRunner := d.(TxRunner)
	if !isTagger || !isRunner {
		t.Skip("the DB tags no threads inside a caller's transaction (db.TxThreadTagger, dbtest.TxRunner)")
	}
	ten := tenant(t, "tag")
	kw := json.RawMessage(`{"input":{"n":1}}`)
	accept := func(thread *db.Thread, threadID, runID string, tag db.ThreadTag, fail bool) (db.Run, error) {
		t.Helper()
		var out db.Run
		err := txr.InTx(bg(), func(tx any) error {
			var err error
			if out, err = tg.CreateTaggedRunTx(bg(), tx, ten, thread, db.Run{ID: runID, ThreadID: threadID, AssistantID: tag.AssistantID, Kwargs: kw}, tag); err != nil {
				return err
			}
			if fail {
				return errRollback
			}
			return nil
		})
		if fail {
			isErr(t, "a rolled back CreateTaggedRunTx", err, errRollback)
		}
		return out, err
	}
	// taggedNoTTL checks thread id's metadata (want, as JSON) and that,
	// without a TTL, it has no expiry.
	taggedNoTTL := func(what, id, want string) {
		t.Helper()
		th, err := d.GetThread(bg(), ten, id)
		ok(t, "GetThread of "+what, err)
		jsonEq(t, what+"'s metadata", th.Metadata, want)
		if !th.ExpiresAt.IsZero() {
			t.Errorf("%s without a TTL expires at %v", what, th.ExpiresAt)
		}
	}

	// An existing thread with a TTL.
	created, err := d.CreateThread(bg(), ten, db.Thread{ID: "t", Metadata: db.Metadata{"owner": "ann", "graph_id": "old"},
		TTL: &db.TTL{Duration: time.Hour, Strategy: db.TTLDelete}}, db.IfExistsRaise)
	ok(t, "CreateThread", err)
	time.Sleep(2 * time.Millisecond)
	_, _ = accept(nil, "t", "r0", db.ThreadTag{GraphID: "g1", AssistantID: "a1"}, true)
	th, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	if th.Metadata["graph_id"] != "old" || th.Metadata["assistant_id"] != nil || !th.UpdatedAt.Equal(created.UpdatedAt) {
		t.Errorf("a rolled back tag changed the thread: %+v", th)
	}
	if _, err := d.GetRun(bg(), ten, "t", "r0"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("GetRun of the rolled back run: %v, want ErrNotFound", err)
	}
	run, err := accept(nil, "t", "r1", db.ThreadTag{GraphID: "g1", AssistantID: "a1"}, false)
	ok(t, "CreateTaggedRunTx", err)
	if run.ID != "r1" || run.ThreadID != "t" || run.Status != db.RunPending {
		t.Errorf("created %+v, want run r1 pending on thread t", run)
	}
	th, err = d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	jsonEq(t, "the tagged thread's metadata", th.Metadata, `{"owner":"ann","graph_id":"g1","assistant_id":"a1"}`)
	if !th.UpdatedAt.After(created.UpdatedAt) || !th.ExpiresAt.After(created.ExpiresAt) {
		t.Errorf("updated_at %v and expiry %v did not move on from %v and %v", th.UpdatedAt, th.ExpiresAt, created.UpdatedAt, created.ExpiresAt)
	}
	within(t, "the expiry", th.ExpiresAt, th.UpdatedAt.Add(time.Hour-time.Second), th.UpdatedAt.Add(time.Hour+time.Second))
	if _, err := d.GetRun(bg(), ten, "t", "r1"); err != nil {
		t.Errorf("GetRun of the tagged run: %v", err)
	}

	// A thread the accept creates: created with the tag and its own keys.
	_, err = accept(&db.Thread{ID: "new", Metadata: db.Metadata{"owner": "bob"}}, "new", "r2", db.ThreadTag{GraphID: "g2", AssistantID: "a2"}, false)
	ok(t, "CreateTaggedRunTx with a new thread", err)
	taggedNoTTL("the new thread", "new", `{"owner":"bob","graph_id":"g2","assistant_id":"a2"}`)

	// A thread asked to be created that exists, without a TTL: tagged,
	// its metadata not replaced by the request's, no expiry.
	mkThread(t, d, ten, "old", db.Metadata{"owner": "cy"})
	_, err = accept(&db.Thread{ID: "old", Metadata: db.Metadata{"owner": "eve"}}, "old", "r3", db.ThreadTag{GraphID: "g3", AssistantID: "a3"}, false)
	ok(t, "CreateTaggedRunTx with a thread to create that exists", err)
	taggedNoTTL("the existing thread", "old", `{"owner":"cy","graph_id":"g3","assistant_id":"a3"}`)

	// A missing thread: not found, not created.
	_, err = accept(nil, "missing", "r4", db.ThreadTag{GraphID: "g", AssistantID: "a"}, false)
	isErr(t, "CreateTaggedRunTx on a missing thread", err, db.ErrNotFound)
	if _, err := d.GetThread(bg(), ten, "missing"); err == nil {
		t.Error("CreateTaggedRunTx created a missing thread")
	}
}

// errRollback is what a test's transaction returns to be rolled back.
var errRollback = errors.New("dbtest: roll back")

// testResultTitle: a thread's result with a Title (SetThreadResult, and
// FinishRunWithResult where the DB has it) sets the metadata key title
// unless the thread has one, keeping the other keys; an empty Title
// leaves the metadata alone.
func testResultTitle(t *testing.T, d db.DB) {
	ten := tenant(t, "title")
	mkThread(t, d, ten, "t", db.Metadata{"owner": "ann"})
	titleOf := func(th db.Thread) any { return th.Metadata["title"] }
	th, err := d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadIdle})
	ok(t, "SetThreadResult without a title", err)
	if titleOf(th) != nil || th.Metadata["owner"] != "ann" {
		t.Errorf("metadata %v after a result without a title", th.Metadata)
	}
	th, err = d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadIdle, Title: "Plan my week"})
	ok(t, "SetThreadResult with a title", err)
	if titleOf(th) != "Plan my week" || th.Metadata["owner"] != "ann" {
		t.Errorf("metadata %v, want the title set and owner kept", th.Metadata)
	}
	th, err = d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadIdle, Title: "Another"})
	ok(t, "SetThreadResult with a second title", err)
	if titleOf(th) != "Plan my week" {
		t.Errorf("a second title replaced the first: %v", th.Metadata)
	}
	stored, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	if titleOf(stored) != "Plan my week" {
		t.Errorf("stored metadata %v", stored.Metadata)
	}
	rf, isRF := d.(db.ResultFinisher)
	if !isRF {
		return
	}
	mkThread(t, d, ten, "u", nil)
	mkRun(t, d, ten, "u", "r")
	_, th, _, err = rf.FinishRunWithResult(bg(), claim(t, d, ten, "r", "w"), db.RunSuccess, nil, "",
		db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{}`), Title: "First"})
	ok(t, "FinishRunWithResult with a title", err)
	if titleOf(th) != "First" {
		t.Errorf("the finish's thread has metadata %v, want the title First", th.Metadata)
	}
	mkRun(t, d, ten, "u", "r2")
	_, th, _, err = rf.FinishRunWithResult(bg(), claim(t, d, ten, "r2", "w"), db.RunSuccess, nil, "",
		db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{}`), Title: "Second"})
	ok(t, "FinishRunWithResult with a second title", err)
	if titleOf(th) != "First" {
		t.Errorf("a second finish's title replaced the first: %v", th.Metadata)
	}
}
