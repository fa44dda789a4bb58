package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

func testThreadCreate(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	before := time.Now()
	th, err := d.CreateThread(bg(), ten, db.Thread{ID: "t1", Metadata: db.Metadata{"user": "u1"}}, db.IfExistsRaise)
	ok(t, "CreateThread", err)
	after := time.Now()
	if th.ID != "t1" || th.Status != db.ThreadIdle || th.Error != "" {
		t.Errorf("created %+v, want ID t1, status idle, no error", th)
	}
	jsonEq(t, "metadata", th.Metadata, `{"user":"u1"}`)
	jsonEq(t, "interrupts", th.Interrupts, `{}`)
	if len(th.Values) != 0 {
		t.Errorf("new thread values = %s, want none", th.Values)
	}
	within(t, "CreatedAt", th.CreatedAt, before, after)

	got, err := d.GetThread(bg(), ten, "t1")
	ok(t, "GetThread", err)
	if got.ID != "t1" || got.Status != db.ThreadIdle || !got.CreatedAt.Equal(th.CreatedAt) {
		t.Errorf("GetThread = %+v, want %+v", got, th)
	}
	_, err = d.CreateThread(bg(), ten, db.Thread{ID: "t1"}, db.IfExistsRaise)
	isErr(t, "create a taken ID with raise", err, db.ErrConflict)
	names(t, "create a taken ID with raise", err, "t1")
	same, err := d.CreateThread(bg(), ten, db.Thread{ID: "t1", Metadata: db.Metadata{"user": "other"}}, db.IfExistsDoNothing)
	ok(t, "create a taken ID with do_nothing", err)
	jsonEq(t, "do_nothing metadata", same.Metadata, `{"user":"u1"}`)

	full, err := d.CreateThread(bg(), ten, db.Thread{Status: db.ThreadInterrupted,
		Values: json.RawMessage(`{"messages":[1]}`), Interrupts: json.RawMessage(`{"task":[{"id":"i"}]}`)}, db.IfExistsRaise)
	ok(t, "CreateThread with values", err)
	if full.ID == "" || full.Status != db.ThreadInterrupted {
		t.Errorf("created %+v, want a new ID and status interrupted", full)
	}
	jsonEq(t, "values", full.Values, `{"messages":[1]}`)
	jsonEq(t, "interrupts", full.Interrupts, `{"task":[{"id":"i"}]}`)
	_, err = d.GetThread(bg(), ten, "missing")
	isErr(t, "GetThread of a missing ID", err, db.ErrNotFound)
}

func testThreadUpdate(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	th := mkThread(t, d, ten, "t", db.Metadata{"a": 1, "b": map[string]any{"x": 1}})
	time.Sleep(2 * time.Millisecond)
	up, err := d.UpdateThreadMetadata(bg(), ten, "t", db.Metadata{"b": map[string]any{"y": 2}, "c": "new"})
	ok(t, "UpdateThreadMetadata", err)
	jsonEq(t, "merged metadata", up.Metadata, `{"a":1,"b":{"y":2},"c":"new"}`)
	if !up.UpdatedAt.After(th.UpdatedAt) || !up.CreatedAt.Equal(th.CreatedAt) {
		t.Errorf("update: UpdatedAt %v (was %v), CreatedAt %v (was %v); want UpdatedAt later and CreatedAt kept",
			up.UpdatedAt, th.UpdatedAt, up.CreatedAt, th.CreatedAt)
	}

	r, err := d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadInterrupted,
		Values: json.RawMessage(`{"n":1}`), Interrupts: json.RawMessage(`{"t1":[{"id":"i1","value":"ask"}]}`)})
	ok(t, "SetThreadResult", err)
	if r.Status != db.ThreadInterrupted {
		t.Errorf("status %q, want interrupted", r.Status)
	}
	jsonEq(t, "values", r.Values, `{"n":1}`)
	jsonEq(t, "interrupts", r.Interrupts, `{"t1":[{"id":"i1","value":"ask"}]}`)
	jsonEq(t, "metadata kept", r.Metadata, `{"a":1,"b":{"y":2},"c":"new"}`)

	// Nil values and interrupts keep the stored ones; the error is set.
	r, err = d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadError, Error: "boom"})
	ok(t, "SetThreadResult", err)
	if r.Status != db.ThreadError || r.Error != "boom" {
		t.Errorf("status %q error %q, want error boom", r.Status, r.Error)
	}
	jsonEq(t, "values kept", r.Values, `{"n":1}`)
	jsonEq(t, "interrupts kept", r.Interrupts, `{"t1":[{"id":"i1","value":"ask"}]}`)
	r, err = d.SetThreadResult(bg(), ten, "t", db.ThreadResult{Status: db.ThreadIdle, Values: json.RawMessage(`{"n":2}`), Interrupts: json.RawMessage(`{}`)})
	ok(t, "SetThreadResult", err)
	if r.Error != "" || r.Status != db.ThreadIdle {
		t.Errorf("status %q error %q, want idle and the error cleared", r.Status, r.Error)
	}
	jsonEq(t, "interrupts cleared", r.Interrupts, `{}`)
	got, err := d.GetThread(bg(), ten, "t")
	ok(t, "GetThread", err)
	jsonEq(t, "stored values", got.Values, `{"n":2}`)

	_, err = d.UpdateThreadMetadata(bg(), ten, "missing", db.Metadata{"a": 1})
	isErr(t, "UpdateThreadMetadata of a missing thread", err, db.ErrNotFound)
	_, err = d.SetThreadResult(bg(), ten, "missing", db.ThreadResult{Status: db.ThreadIdle})
	isErr(t, "SetThreadResult of a missing thread", err, db.ErrNotFound)
}

func testThreadDeleteCascades(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "keep", nil)
	mkRun(t, d, ten, "t", "r1")
	mkRun(t, d, ten, "t", "r2")
	l := claim(t, d, ten, "r1", "w")
	_, err := d.AppendEvents(bg(), l, events("values", 0, 3))
	ok(t, "AppendEvents", err)
	mkRun(t, d, ten, "keep", "rk")

	ok(t, "DeleteThread", d.DeleteThread(bg(), ten, "t"))
	_, err = d.GetThread(bg(), ten, "t")
	isErr(t, "GetThread after delete", err, db.ErrNotFound)
	for _, r := range []string{"r1", "r2"} {
		_, err = d.GetRun(bg(), ten, "t", r)
		isErr(t, "GetRun after its thread was deleted", err, db.ErrNotFound)
		_, err = d.ReadEvents(bg(), ten, r, 0, 0)
		isErr(t, "ReadEvents after the thread was deleted", err, db.ErrNotFound)
	}
	_, err = d.AppendEvents(bg(), l, events("values", 3, 1))
	isErr(t, "AppendEvents with the lease of a deleted run", err, db.ErrLeaseLost)
	leases, err := d.ExpiredLeases(bg(), time.Now().Add(48*time.Hour), 0)
	ok(t, "ExpiredLeases", err)
	for _, x := range leases {
		if x.Tenant == ten && x.RunID == "r1" {
			t.Errorf("the lease of run r1 outlived its thread: %+v", x)
		}
	}
	// Re-creating the thread brings nothing back.
	mkThread(t, d, ten, "t", nil)
	runs, err := d.ListRuns(bg(), ten, "t", db.RunQuery{})
	ok(t, "ListRuns", err)
	if len(runs) != 0 {
		t.Errorf("a re-created thread lists runs %v, want none", ids(runs, runID))
	}
	if _, err := d.GetRun(bg(), ten, "keep", "rk"); err != nil {
		t.Errorf("the run of another thread went with the deleted one: %v", err)
	}
	isErr(t, "DeleteThread twice", d.DeleteThread(bg(), ten, "missing"), db.ErrNotFound)
}

func testThreadSearch(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mk := func(id string, status db.ThreadStatus, md db.Metadata, values string) {
		mkThread(t, d, ten, id, md)
		var v json.RawMessage
		if values != "" {
			v = json.RawMessage(values)
		}
		_, err := d.SetThreadResult(bg(), ten, id, db.ThreadResult{Status: status, Values: v})
		ok(t, "SetThreadResult "+id, err)
	}
	mk("t1", db.ThreadIdle, db.Metadata{"user": "ann", "graph_id": "chat"}, `{"topic":"billing","messages":[{"type":"human","content":"hi"}],"n":3}`)
	mk("t2", db.ThreadBusy, db.Metadata{"user": "bob", "graph_id": "chat"}, `{"topic":"sales","n":3.0}`)
	mk("t3", db.ThreadInterrupted, db.Metadata{"user": "ann", "graph_id": "plan", "extra": map[string]any{"deep": []any{1, 2}}}, `{"topic":"billing"}`)
	mk("t4", db.ThreadError, nil, "")
	mk("t5", db.ThreadIdle, db.Metadata{"title": "Plan the Team OFFSITE"}, "")
	mk("t6", db.ThreadIdle, db.Metadata{"title": "Ärger mit der Rechnung"}, "")
	mk("t7", db.ThreadIdle, db.Metadata{"title": 42, "name": "offsite"}, "")

	asc := db.Query{SortBy: "thread_id", SortOrder: "asc"}
	withMD := func(md db.Metadata) db.Query { q := asc; q.Metadata = md; return q }
	cases := []struct {
		name string
		q    db.ThreadQuery
		want []string
	}{
		{"all", db.ThreadQuery{Query: asc}, []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"}},
		{"ids", db.ThreadQuery{Query: asc, IDs: []string{"t3", "t1", "nope"}}, []string{"t1", "t3"}},
		{"empty ids list", db.ThreadQuery{Query: asc, IDs: []string{}}, nil},
		{"status", db.ThreadQuery{Query: asc, Status: db.ThreadInterrupted}, []string{"t3"}},
		{"metadata", db.ThreadQuery{Query: withMD(db.Metadata{"user": "ann"})}, []string{"t1", "t3"}},
		{"metadata nested array", db.ThreadQuery{Query: withMD(db.Metadata{"extra": map[string]any{"deep": []any{2}}})}, []string{"t3"}},
		{"metadata and status", db.ThreadQuery{Query: withMD(db.Metadata{"user": "ann"}), Status: db.ThreadIdle}, []string{"t1"}},
		{"values", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{"topic":"billing"}`)}, []string{"t1", "t3"}},
		{"values number by value", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{"n":3}`)}, []string{"t1", "t2"}},
		{"values nested", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{"messages":[{"type":"human"}]}`)}, []string{"t1"}},
		{"values and ids", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{"topic":"billing"}`), IDs: []string{"t3"}}, []string{"t3"}},
		{"values empty object", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{}`)}, []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"}},
		{"title any case", db.ThreadQuery{Query: asc, Title: "team offsite"}, []string{"t5"}},
		{"title non-ASCII", db.ThreadQuery{Query: asc, Title: "ärger"}, []string{"t6"}},
		{"title not a string", db.ThreadQuery{Query: asc, Title: "42"}, nil},
		{"title and metadata", db.ThreadQuery{Query: withMD(db.Metadata{"user": "ann"}), Title: "offsite"}, nil},
		{"title and status", db.ThreadQuery{Query: asc, Title: "e", Status: db.ThreadIdle}, []string{"t5", "t6"}},
		{"values no match", db.ThreadQuery{Query: asc, Values: json.RawMessage(`{"topic":"other"}`)}, nil},
	}
	for _, c := range cases {
		got, err := d.SearchThreads(bg(), ten, c.q)
		ok(t, c.name, err)
		sameIDs(t, c.name, ids(got, threadID), c.want)
		n, err := d.CountThreads(bg(), ten, c.q)
		ok(t, c.name+" count", err)
		if n != len(c.want) {
			t.Errorf("%s: count %d, want %d", c.name, n, len(c.want))
		}
	}
}

// testThreadSearchExactNumbers: metadata numbers are matched as stored,
// so integers beyond float64's precision match exactly, on every backend.
func testThreadSearchExactNumbers(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mkThread(t, d, ten, "big", db.Metadata{"id": json.Number("12345678901234567891")})
	mkThread(t, d, ten, "near", db.Metadata{"id": json.Number("12345678901234567890")})
	got, err := d.SearchThreads(bg(), ten, db.ThreadQuery{Query: db.Query{Metadata: db.Metadata{"id": json.Number("12345678901234567891")}}})
	ok(t, "SearchThreads", err)
	sameIDs(t, "search by a large integer", ids(got, threadID), []string{"big"})
}

func testThreadSortPaging(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	statuses := []db.ThreadStatus{db.ThreadIdle, db.ThreadBusy, db.ThreadError, db.ThreadInterrupted, db.ThreadIdle}
	for i, s := range statuses {
		_, err := d.CreateThread(bg(), ten, db.Thread{ID: fmt.Sprintf("t%d", i), Status: s, Metadata: db.Metadata{"even": i%2 == 0}}, db.IfExistsRaise)
		ok(t, "CreateThread", err)
		time.Sleep(2 * time.Millisecond)
	}
	_, err := d.UpdateThreadMetadata(bg(), ten, "t1", db.Metadata{"touched": true})
	ok(t, "UpdateThreadMetadata", err)
	cases := []struct {
		q    db.Query
		want []string
	}{
		{db.Query{}, []string{"t4", "t3", "t2", "t1", "t0"}},
		{db.Query{SortOrder: "asc", Limit: 2}, []string{"t0", "t1"}},
		{db.Query{SortOrder: "asc", Limit: 2, Offset: 2}, []string{"t2", "t3"}},
		{db.Query{SortOrder: "asc", Limit: 2, Offset: 4}, []string{"t4"}},
		{db.Query{SortOrder: "asc", Offset: 9}, nil},
		{db.Query{SortBy: "updated_at", Limit: 2}, []string{"t1", "t4"}},
		{db.Query{SortBy: "status", SortOrder: "asc"}, []string{"t1", "t2", "t0", "t4", "t3"}},
		{db.Query{SortBy: "thread_id", Metadata: db.Metadata{"even": true}, Limit: 2}, []string{"t4", "t2"}},
		{db.Query{SortBy: "thread_id", Metadata: db.Metadata{"even": true}, Limit: 2, Offset: 2}, []string{"t0"}},
	}
	for _, c := range cases {
		got, err := d.SearchThreads(bg(), ten, db.ThreadQuery{Query: c.q})
		ok(t, "SearchThreads", err)
		sameIDs(t, fmt.Sprintf("sort %q %q limit %d offset %d md %v", c.q.SortBy, c.q.SortOrder, c.q.Limit, c.q.Offset, c.q.Metadata),
			ids(got, threadID), c.want)
	}
}

func testThreadCopy(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	src := mkThread(t, d, ten, "src", db.Metadata{"k": "v"})
	_, err := d.SetThreadResult(bg(), ten, "src", db.ThreadResult{Status: db.ThreadInterrupted,
		Values: json.RawMessage(`{"n":1}`), Interrupts: json.RawMessage(`{"a":[]}`)})
	ok(t, "SetThreadResult", err)
	mkRun(t, d, ten, "src", "r")
	time.Sleep(2 * time.Millisecond)
	cp, err := d.CopyThread(bg(), ten, "src", "dst")
	ok(t, "CopyThread", err)
	if cp.ID != "dst" || cp.Status != db.ThreadInterrupted || !cp.CreatedAt.After(src.CreatedAt) {
		t.Errorf("copy = %+v, want ID dst, status interrupted, created after the source", cp)
	}
	jsonEq(t, "copied metadata", cp.Metadata, `{"k":"v"}`)
	jsonEq(t, "copied values", cp.Values, `{"n":1}`)
	jsonEq(t, "copied interrupts", cp.Interrupts, `{"a":[]}`)
	runs, err := d.ListRuns(bg(), ten, "dst", db.RunQuery{})
	ok(t, "ListRuns of the copy", err)
	if len(runs) != 0 {
		t.Errorf("the copy has runs %v, want none", ids(runs, runID))
	}
	// The copy is independent.
	_, err = d.UpdateThreadMetadata(bg(), ten, "dst", db.Metadata{"k": "changed"})
	ok(t, "UpdateThreadMetadata", err)
	got, err := d.GetThread(bg(), ten, "src")
	ok(t, "GetThread", err)
	jsonEq(t, "source metadata after the copy changed", got.Metadata, `{"k":"v"}`)

	auto, err := d.CopyThread(bg(), ten, "src", "")
	ok(t, "CopyThread to a new ID", err)
	if auto.ID == "" || auto.ID == "src" || auto.ID == "dst" {
		t.Errorf("copy without a target ID got ID %q, want a new one", auto.ID)
	}
	_, err = d.CopyThread(bg(), ten, "src", "dst")
	isErr(t, "CopyThread onto a taken ID", err, db.ErrConflict)
	_, err = d.CopyThread(bg(), ten, "missing", "x")
	isErr(t, "CopyThread of a missing thread", err, db.ErrNotFound)
}
