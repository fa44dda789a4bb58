package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testTenantIsolation: tenant B, knowing tenant A's IDs, can neither read,
// change, delete, list nor count A's rows, nor write with a lease it
// forged from A's; A's rows are unchanged afterwards.
func testTenantIsolation(t *testing.T, d db.DB) {
	a, b := tenant(t, "a"), tenant(t, "b")
	_, err := d.CreateAssistant(bg(), a, db.Assistant{ID: "asst", GraphID: "g", Name: "A's", Metadata: db.Metadata{"k": "v"}}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	mkThread(t, d, a, "t", db.Metadata{"k": "v"})
	mkRun(t, d, a, "t", "running")
	mkRun(t, d, a, "t", "pending")
	mkRun(t, d, a, "t", "done")
	ld := claim(t, d, a, "done", "w")
	_, err = d.FinishRun(bg(), ld, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	la := claim(t, d, a, "running", "w")
	_, err = d.AppendEvents(bg(), la, events("values", 0, 2))
	ok(t, "AppendEvents", err)

	notFound := func(what string, err error) {
		t.Helper()
		isErr(t, "tenant B: "+what, err, db.ErrNotFound)
	}
	_, err = d.GetAssistant(bg(), b, "asst")
	notFound("GetAssistant", err)
	_, err = d.UpdateAssistant(bg(), b, "asst", db.AssistantPatch{Name: ptr("B's")})
	notFound("UpdateAssistant", err)
	notFound("DeleteAssistant", d.DeleteAssistant(bg(), b, "asst"))
	_, err = d.AssistantVersions(bg(), b, "asst", db.Query{})
	notFound("AssistantVersions", err)
	_, err = d.SetLatestVersion(bg(), b, "asst", 1)
	notFound("SetLatestVersion", err)
	as, err := d.SearchAssistants(bg(), b, db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"k": "v"}}})
	ok(t, "SearchAssistants", err)
	as2, err := d.SearchAssistants(bg(), b, db.AssistantQuery{GraphID: "g"})
	ok(t, "SearchAssistants", err)
	if len(as)+len(as2) != 0 {
		t.Errorf("tenant B's assistant search found %v %v", ids(as, assistantID), ids(as2, assistantID))
	}
	if n, err := d.CountAssistants(bg(), b, db.AssistantQuery{}); err != nil || n != 0 {
		t.Errorf("tenant B's CountAssistants = %d, %v; want 0", n, err)
	}

	_, err = d.GetThread(bg(), b, "t")
	notFound("GetThread", err)
	_, err = d.UpdateThreadMetadata(bg(), b, "t", db.Metadata{"k": "B"})
	notFound("UpdateThreadMetadata", err)
	_, err = d.SetThreadResult(bg(), b, "t", db.ThreadResult{Status: db.ThreadError})
	notFound("SetThreadResult", err)
	_, err = d.CopyThread(bg(), b, "t", "stolen")
	notFound("CopyThread", err)
	notFound("DeleteThread", d.DeleteThread(bg(), b, "t"))
	ths, err := d.SearchThreads(bg(), b, db.ThreadQuery{IDs: []string{"t"}})
	ok(t, "SearchThreads", err)
	ths2, err := d.SearchThreads(bg(), b, db.ThreadQuery{Query: db.Query{Metadata: db.Metadata{"k": "v"}}})
	ok(t, "SearchThreads", err)
	if len(ths)+len(ths2) != 0 {
		t.Errorf("tenant B's thread search found %v %v", ids(ths, threadID), ids(ths2, threadID))
	}
	if n, err := d.CountThreads(bg(), b, db.ThreadQuery{}); err != nil || n != 0 {
		t.Errorf("tenant B's CountThreads = %d, %v; want 0", n, err)
	}

	_, err = d.CreateRun(bg(), b, db.Run{ThreadID: "t"})
	notFound("CreateRun on A's thread", err)
	_, err = d.GetRun(bg(), b, "t", "running")
	notFound("GetRun", err)
	_, err = d.ListRuns(bg(), b, "t", db.RunQuery{})
	notFound("ListRuns", err)
	notFound("DeleteRun", d.DeleteRun(bg(), b, "t", "done"))
	_, err = d.NextPending(bg(), b, "t", time.Now())
	notFound("NextPending", err)
	_, _, err = d.ClaimRun(bg(), b, "pending", "thief", time.Minute)
	notFound("ClaimRun", err)
	_, err = d.CancelPending(bg(), b, "t", "pending", db.RunInterrupted)
	notFound("CancelPending", err)
	_, err = d.RequestCancel(bg(), b, "t", "running", "interrupt")
	notFound("RequestCancel", err)
	_, err = d.ReadEvents(bg(), b, "running", 0, 0)
	notFound("ReadEvents", err)
	_, err = d.DeleteEvents(bg(), b, "running")
	notFound("DeleteEvents", err)

	forged := la
	forged.Tenant = b
	_, err = d.AppendEvents(bg(), forged, events("values", 0, 1))
	isErr(t, "tenant B: AppendEvents with a forged lease", err, db.ErrLeaseLost)
	_, err = d.RenewLease(bg(), forged, time.Minute)
	isErr(t, "tenant B: RenewLease with a forged lease", err, db.ErrLeaseLost)
	_, err = d.FinishRun(bg(), forged, db.RunError, nil, "")
	isErr(t, "tenant B: FinishRun with a forged lease", err, db.ErrLeaseLost)
	_, err = d.TakeOver(bg(), forged, "thief", time.Minute)
	isErr(t, "tenant B: TakeOver with a forged lease", err, db.ErrLeaseLost)

	// A's rows are untouched.
	asst, err := d.GetAssistant(bg(), a, "asst")
	ok(t, "GetAssistant", err)
	if asst.Name != "A's" || asst.Version != 1 {
		t.Errorf("A's assistant after B's attempts: %+v", asst)
	}
	th, err := d.GetThread(bg(), a, "t")
	ok(t, "GetThread", err)
	jsonEq(t, "A's thread metadata", th.Metadata, `{"k":"v"}`)
	if th.Status != db.ThreadBusy { // its run "running" is running
		t.Errorf("A's thread status %q, want busy", th.Status)
	}
	runs, err := d.ListRuns(bg(), a, "t", db.RunQuery{})
	ok(t, "ListRuns", err)
	got := map[string]db.RunStatus{}
	for _, r := range runs {
		got[r.ID] = r.Status
		if r.CancelRequested != "" {
			t.Errorf("A's run %s has a cancel request %q from B", r.ID, r.CancelRequested)
		}
	}
	if len(got) != 3 || got["running"] != db.RunRunning || got["pending"] != db.RunPending || got["done"] != db.RunSuccess {
		t.Errorf("A's runs after B's attempts: %v", got)
	}
	evs, err := d.ReadEvents(bg(), a, "running", 0, 0)
	ok(t, "ReadEvents", err)
	if len(evs) != 2 {
		t.Errorf("A's run has %d events, want 2", len(evs))
	}
	if _, err := d.RenewLease(bg(), la, time.Minute); err != nil {
		t.Errorf("A's lease after B's attempts: %v", err)
	}
}

// testSameIDTwoTenants: the same assistant, thread and run IDs live in two
// tenants side by side, each with its own data, and deleting one leaves
// the other.
func testSameIDTwoTenants(t *testing.T, d db.DB) {
	a, b := tenant(t, "a"), tenant(t, "b")
	for _, ten := range []string{a, b} {
		_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "same", GraphID: "g", Name: ten}, db.IfExistsRaise)
		ok(t, "CreateAssistant", err)
		mkThread(t, d, ten, "same", db.Metadata{"owner": ten})
		mkRun(t, d, ten, "same", "same")
	}
	// One running run per (tenant, thread): both tenants may run at once.
	la := claim(t, d, a, "same", "w")
	lb := claim(t, d, b, "same", "w")
	_, err := d.AppendEvents(bg(), la, events("a", 0, 2))
	ok(t, "AppendEvents", err)
	eb, err := d.AppendEvents(bg(), lb, events("b", 0, 1))
	ok(t, "AppendEvents", err)
	if eb[0].Seq != 1 {
		t.Errorf("B's first event has seq %d, want 1 (logs are per tenant and run)", eb[0].Seq)
	}
	for _, ten := range []string{a, b} {
		th, err := d.GetThread(bg(), ten, "same")
		ok(t, "GetThread", err)
		jsonEq(t, "thread metadata", th.Metadata, `{"owner":`+string(mustJSON(ten))+`}`)
		as, err := d.GetAssistant(bg(), ten, "same")
		ok(t, "GetAssistant", err)
		if as.Name != ten {
			t.Errorf("tenant %s sees assistant name %q", ten, as.Name)
		}
	}
	ok(t, "DeleteThread", d.DeleteThread(bg(), b, "same"))
	ok(t, "DeleteAssistant", d.DeleteAssistant(bg(), b, "same"))
	if _, err := d.GetThread(bg(), a, "same"); err != nil {
		t.Errorf("deleting B's thread removed A's: %v", err)
	}
	if _, err := d.GetAssistant(bg(), a, "same"); err != nil {
		t.Errorf("deleting B's assistant removed A's: %v", err)
	}
	evs, err := d.ReadEvents(bg(), a, "same", 0, 0)
	ok(t, "ReadEvents", err)
	if len(evs) != 2 || evs[0].Event != "a" {
		t.Errorf("A's events after B's thread went: %v", evs)
	}
	if _, err := d.AppendEvents(bg(), la, events("a", 2, 1)); err != nil {
		t.Errorf("A's lease after B's thread went: %v", err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// testInvalidArguments: bad arguments are ErrInvalid with a message, not a
// panic, a silent default or a database error.
func testInvalidArguments(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	cases := []struct {
		name string
		err  error
	}{}
	add := func(name string, err error) {
		cases = append(cases, struct {
			name string
			err  error
		}{name, err})
	}
	_, err := d.CreateAssistant(bg(), ten, db.Assistant{GraphID: ""}, db.IfExistsRaise)
	add("assistant without graph_id", err)
	_, err = d.CreateAssistant(bg(), ten, db.Assistant{GraphID: "g", Config: json.RawMessage(`[1]`)}, db.IfExistsRaise)
	add("assistant config not an object", err)
	_, err = d.CreateAssistant(bg(), ten, db.Assistant{GraphID: "g"}, "sometimes")
	add("unknown if_exists", err)
	_, err = d.CreateAssistant(bg(), "", db.Assistant{GraphID: "g"}, db.IfExistsRaise)
	add("empty tenant", err)
	_, err = d.SearchAssistants(bg(), ten, db.AssistantQuery{Query: db.Query{SortBy: "password"}})
	add("unknown sort column", err)
	_, err = d.SearchAssistants(bg(), ten, db.AssistantQuery{Query: db.Query{SortOrder: "sideways"}})
	add("unknown sort order", err)
	_, err = d.SearchThreads(bg(), ten, db.ThreadQuery{Query: db.Query{Limit: -1}})
	add("negative limit", err)
	_, err = d.SearchThreads(bg(), ten, db.ThreadQuery{Query: db.Query{SortBy: "name"}})
	add("assistant sort column on threads", err)
	_, err = d.SearchThreads(bg(), ten, db.ThreadQuery{Status: "asleep"})
	add("unknown thread status", err)
	_, err = d.SearchThreads(bg(), ten, db.ThreadQuery{Values: json.RawMessage(`"x"`)})
	add("values filter not an object", err)
	_, err = d.CountThreads(bg(), ten, db.ThreadQuery{Values: json.RawMessage(`{bad`)})
	add("values filter not JSON", err)
	_, err = d.CreateThread(bg(), ten, db.Thread{Status: "asleep"}, db.IfExistsRaise)
	add("create thread with unknown status", err)
	_, err = d.CreateThread(bg(), ten, db.Thread{Values: json.RawMessage(`{bad`)}, db.IfExistsRaise)
	add("create thread with bad values", err)
	_, err = d.SetThreadResult(bg(), ten, "t", db.ThreadResult{})
	add("thread result without status", err)
	_, err = d.ListRuns(bg(), ten, "t", db.RunQuery{Status: "sleeping"})
	add("unknown run status", err)
	_, err = d.CreateRun(bg(), ten, db.Run{ThreadID: "t", Kwargs: json.RawMessage(`{bad`)})
	add("run kwargs not JSON", err)
	_, _, err = d.ClaimRun(bg(), ten, "r", "w", 0)
	add("zero lease ttl", err)
	_, _, err = d.ClaimRun(bg(), ten, "r", "", time.Minute)
	add("empty lease owner", err)
	_, err = d.ExpiredLeases(bg(), time.Now(), -1)
	add("negative lease limit", err)
	_, err = d.ReadEvents(bg(), ten, "r", 0, -5)
	add("negative event limit", err)
	for _, c := range cases {
		if !errors.Is(c.err, db.ErrInvalid) {
			t.Errorf("%s: error %v, want one wrapping db.ErrInvalid", c.name, c.err)
		} else if strings.TrimSpace(strings.TrimSuffix(c.err.Error(), db.ErrInvalid.Error())) == "" {
			t.Errorf("%s: error %q says nothing about what was wrong", c.name, c.err)
		}
	}
	// Nothing was stored by the rejected calls.
	n, err := d.CountAssistants(bg(), ten, db.AssistantQuery{})
	ok(t, "CountAssistants", err)
	if n != 0 {
		t.Errorf("rejected creates stored %d assistants", n)
	}
	runs, err := d.ListRuns(bg(), ten, "t", db.RunQuery{})
	ok(t, "ListRuns", err)
	if len(runs) != 1 || runs[0].Status != db.RunPending {
		t.Errorf("rejected calls changed the runs: %+v", runs)
	}
}

// testCorrupt: a row whose stored JSON does not decode is an error naming
// the row, on get and on search, never a zero value.
func testCorrupt(t *testing.T, d db.DB) {
	c, isC := d.(Corrupter)
	if !isC {
		t.Skip("the DB does not implement dbtest.Corrupter")
	}
	ten := tenant(t, "a")
	_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "bad-asst", GraphID: "g"}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	mkThread(t, d, ten, "bad-thread", nil)
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "bad-run")
	ok(t, "Corrupt assistant", c.Corrupt("assistant", ten, "bad-asst"))
	ok(t, "Corrupt thread", c.Corrupt("thread", ten, "bad-thread"))
	ok(t, "Corrupt run", c.Corrupt("run", ten, "bad-run"))

	check := func(what string, err error, id string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s of a corrupted row succeeded", what)
			return
		}
		if errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s of a corrupted row: %v, want a decode error, not ErrNotFound", what, err)
		}
		names(t, what, err, id)
	}
	a, err := d.GetAssistant(bg(), ten, "bad-asst")
	check("GetAssistant", err, "bad-asst")
	if a.ID != "" {
		t.Errorf("GetAssistant of a corrupted row returned %+v with its error", a)
	}
	_, err = d.SearchAssistants(bg(), ten, db.AssistantQuery{})
	check("SearchAssistants", err, "bad-asst")
	_, err = d.GetThread(bg(), ten, "bad-thread")
	check("GetThread", err, "bad-thread")
	_, err = d.SearchThreads(bg(), ten, db.ThreadQuery{})
	check("SearchThreads", err, "bad-thread")
	_, err = d.GetRun(bg(), ten, "t", "bad-run")
	check("GetRun", err, "bad-run")
	_, err = d.ListRuns(bg(), ten, "t", db.RunQuery{})
	check("ListRuns", err, "bad-run")
	_, err = d.NextPending(bg(), ten, "t", time.Now())
	check("NextPending", err, "bad-run")
	if _, err := d.GetThread(bg(), ten, "t"); err != nil {
		t.Errorf("a sound thread next to corrupted rows: %v", err)
	}
}

// testCanceledContext: every method called with a canceled context fails
// with an error wrapping context.Canceled and changes nothing.
func testCanceledContext(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", db.Metadata{"k": "v"})
	mkRun(t, d, ten, "t", "r")
	_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a", GraphID: "g"}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	c, cancel := context.WithCancel(bg())
	cancel()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want an error wrapping context.Canceled", what, err)
		}
	}
	_, err = d.CreateAssistant(c, ten, db.Assistant{ID: "b", GraphID: "g"}, db.IfExistsRaise)
	check("CreateAssistant", err)
	_, err = d.UpdateAssistant(c, ten, "a", db.AssistantPatch{Name: ptr("x")})
	check("UpdateAssistant", err)
	_, err = d.SearchAssistants(c, ten, db.AssistantQuery{})
	check("SearchAssistants", err)
	_, err = d.CreateThread(c, ten, db.Thread{ID: "u"}, db.IfExistsRaise)
	check("CreateThread", err)
	_, err = d.UpdateThreadMetadata(c, ten, "t", db.Metadata{"k": "changed"})
	check("UpdateThreadMetadata", err)
	_, err = d.SearchThreads(c, ten, db.ThreadQuery{Query: db.Query{Metadata: db.Metadata{"k": "v"}}})
	check("SearchThreads", err)
	check("DeleteThread", d.DeleteThread(c, ten, "t"))
	_, err = d.CreateRun(c, ten, db.Run{ThreadID: "t"})
	check("CreateRun", err)
	_, _, err = d.ClaimRun(c, ten, "r", "w", time.Minute)
	check("ClaimRun", err)
	_, err = d.ReadEvents(c, ten, "r", 0, 0)
	check("ReadEvents", err)
	check("Ping", d.Ping(c))

	a, err := d.GetAssistant(bg(), ten, "a")
	ok(t, "GetAssistant", err)
	if a.Version != 1 {
		t.Errorf("a canceled update made version %d", a.Version)
	}
	th, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	jsonEq(t, "metadata after a canceled update", th.Metadata, `{"k":"v"}`)
	r, err := d.GetRun(bg(), ten, "t", "r")
	ok(t, "GetRun", err)
	if r.Status != db.RunPending {
		t.Errorf("a canceled claim left the run %s", r.Status)
	}
	if _, err := d.GetAssistant(bg(), ten, "b"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("a canceled create stored assistant b: %v", err)
	}
}
