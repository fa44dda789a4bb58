package dbtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testTagThread: TagThreadTx (db.TxThreadTagger) sets graph_id and
// assistant_id in the thread's metadata, keeps its other keys, replaces
// the two when they were set, and moves updated_at and a TTL's expiry as
// UpdateThreadMetadata does; it commits only with its transaction.
func testTagThread(t *testing.T, d db.DB) {
	tg, isTagger := d.(db.TxThreadTagger)
	txr, isRunner := d.(TxRunner)
	if !isTagger || !isRunner {
		t.Skip("the DB tags no threads inside a caller's transaction (db.TxThreadTagger, dbtest.TxRunner)")
	}
	ten := tenant(t, "tag")
	created, err := d.CreateThread(bg(), ten, db.Thread{ID: "t", Metadata: db.Metadata{"owner": "ann", "graph_id": "old"},
		TTL: &db.TTL{Duration: time.Hour, Strategy: db.TTLDelete}}, db.IfExistsRaise)
	ok(t, "CreateThread", err)
	time.Sleep(2 * time.Millisecond)
	tag := func(graph, asst string, fail bool) {
		t.Helper()
		err := txr.InTx(bg(), func(tx any) error {
			if err := tg.TagThreadTx(bg(), tx, ten, "t", graph, asst); err != nil {
				return err
			}
			if fail {
				return errRollback
			}
			return nil
		})
		if fail {
			isErr(t, "a rolled back TagThreadTx", err, errRollback)
			return
		}
		ok(t, "TagThreadTx", err)
	}
	tag("g1", "a1", true)
	th, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	if th.Metadata["graph_id"] != "old" || th.Metadata["assistant_id"] != nil || !th.UpdatedAt.Equal(created.UpdatedAt) {
		t.Errorf("a rolled back tag changed the thread: %+v", th)
	}
	tag("g1", "a1", false)
	th, err = d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	want := db.Metadata{"owner": "ann", "graph_id": "g1", "assistant_id": "a1"}
	if len(th.Metadata) != len(want) {
		t.Errorf("metadata %v, want %v", th.Metadata, want)
	}
	for k, v := range want {
		if th.Metadata[k] != v {
			t.Errorf("metadata %v, want %v", th.Metadata, want)
			break
		}
	}
	if !th.UpdatedAt.After(created.UpdatedAt) || !th.ExpiresAt.After(created.ExpiresAt) {
		t.Errorf("updated_at %v and expiry %v did not move on from %v and %v", th.UpdatedAt, th.ExpiresAt, created.UpdatedAt, created.ExpiresAt)
	}
	within(t, "the expiry", th.ExpiresAt, th.UpdatedAt.Add(time.Hour-time.Second), th.UpdatedAt.Add(time.Hour+time.Second))
	// A missing thread is left alone, without an error.
	ok(t, "TagThreadTx of a missing thread", txr.InTx(bg(), func(tx any) error {
		return tg.TagThreadTx(bg(), tx, ten, "missing", "g", "a")
	}))
	if _, err := d.GetThread(bg(), ten, "missing"); err == nil {
		t.Error("TagThreadTx created a missing thread")
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
