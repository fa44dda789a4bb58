package dbtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testAssistantVersionGet checks GetAssistantVersion against the versions
// AssistantVersions lists: the same content, a missing version or
// assistant ErrNotFound.
func testAssistantVersionGet(t *testing.T, d db.DB) {
	g, isGetter := d.(db.AssistantVersionGetter)
	if !isGetter {
		t.Fatalf("%T does not implement db.AssistantVersionGetter", d)
	}
	ten := tenant(t, "av")
	_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a", GraphID: "g", Name: "v1", Config: json.RawMessage(`{"k":1}`)}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	_, err = d.UpdateAssistant(bg(), ten, "a", db.AssistantPatch{Name: ptr("v2"), Context: json.RawMessage(`{"c":2}`)})
	ok(t, "UpdateAssistant", err)
	vs, err := d.AssistantVersions(bg(), ten, "a", db.Query{})
	ok(t, "AssistantVersions", err)
	for _, want := range vs {
		got, err := g.GetAssistantVersion(bg(), ten, "a", want.Version)
		ok(t, "GetAssistantVersion", err)
		if got.Version != want.Version || got.Name != want.Name || got.GraphID != want.GraphID ||
			string(got.Config) != string(want.Config) || string(got.Context) != string(want.Context) ||
			!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("GetAssistantVersion %d = %+v, want %+v as AssistantVersions lists it", want.Version, got, want)
		}
	}
	_, err = g.GetAssistantVersion(bg(), ten, "a", 3)
	isErr(t, "GetAssistantVersion of a missing version", err, db.ErrNotFound)
	_, err = g.GetAssistantVersion(bg(), ten, "missing", 1)
	isErr(t, "GetAssistantVersion of a missing assistant", err, db.ErrNotFound)
	_, err = g.GetAssistantVersion(bg(), tenant(t, "other"), "a", 1)
	isErr(t, "GetAssistantVersion of another tenant's assistant", err, db.ErrNotFound)
}

// testAssistantResolve checks ResolveAssistant: an ID wins over a graph of
// the same name, else the graph's first assistant; neither is ErrNotFound.
func testAssistantResolve(t *testing.T, d db.DB) {
	r, isResolver := d.(db.AssistantResolver)
	if !isResolver {
		t.Fatalf("%T does not implement db.AssistantResolver", d)
	}
	ten := tenant(t, "ar")
	for _, a := range []db.Assistant{{ID: "first", GraphID: "g"}, {ID: "second", GraphID: "g"}, {ID: "g2", GraphID: "other"}, {ID: "x", GraphID: "g2"}} {
		_, err := d.CreateAssistant(bg(), ten, a, db.IfExistsRaise)
		ok(t, "CreateAssistant "+a.ID, err)
		time.Sleep(2 * time.Millisecond) // distinct creation times
	}
	for in, want := range map[string]string{"g": "first", "second": "second", "g2": "g2", "other": "g2"} {
		got, err := r.ResolveAssistant(bg(), ten, in)
		ok(t, "ResolveAssistant "+in, err)
		if got.ID != want {
			t.Errorf("ResolveAssistant(%q) = %q, want %q", in, got.ID, want)
		}
	}
	_, err := r.ResolveAssistant(bg(), ten, "nothing")
	isErr(t, "ResolveAssistant of neither an ID nor a graph", err, db.ErrNotFound)
	_, err = r.ResolveAssistant(bg(), tenant(t, "other"), "g")
	isErr(t, "ResolveAssistant in another tenant", err, db.ErrNotFound)
}

// testNextPendingRun checks that NextPendingRun returns NextPending's run,
// whether another run of the thread is running, and the run's assistant.
func testNextPendingRun(t *testing.T, d db.DB) {
	pr, isReader := d.(db.PendingReader)
	if !isReader {
		t.Fatalf("%T does not implement db.PendingReader", d)
	}
	ten := tenant(t, "np")
	mkThread(t, d, ten, "t", nil)
	_, _, _, _, err := pr.NextPendingRun(bg(), ten, "t", time.Now())
	isErr(t, "NextPendingRun with none pending", err, db.ErrNotFound)
	asst, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "asst", GraphID: "g", Name: "n", Metadata: db.Metadata{"m": 1}}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	mkRun(t, d, ten, "t", "r1")
	mkRun(t, d, ten, "t", "r2")
	run, running, a, aok, err := pr.NextPendingRun(bg(), ten, "t", time.Now())
	ok(t, "NextPendingRun", err)
	if run.ID != "r1" || running || !aok || a.ID != asst.ID || a.Name != "n" || a.Version != 1 || a.Metadata["m"] != float64(1) ||
		!a.UpdatedAt.Equal(asst.UpdatedAt) {
		t.Errorf("NextPendingRun = run %s, running %v, assistant %+v (%v); want r1, false, %+v", run.ID, running, a, aok, asst)
	}
	claim(t, d, ten, "r1", "w")
	run, running, _, _, err = pr.NextPendingRun(bg(), ten, "t", time.Now())
	ok(t, "NextPendingRun", err)
	if run.ID != "r2" || !running {
		t.Errorf("NextPendingRun with r1 running = %s, running %v; want r2, true", run.ID, running)
	}
	ok(t, "DeleteAssistant", d.DeleteAssistant(bg(), ten, "asst"))
	if _, _, _, aok, err := pr.NextPendingRun(bg(), ten, "t", time.Now()); err != nil || aok {
		t.Errorf("NextPendingRun with its assistant gone: ok %v, %v; want no assistant and no error", aok, err)
	}
}

// testEventsStatus checks that ReadEventsStatus reads the events as
// ReadEvents does, with the run's status of the same read.
func testEventsStatus(t *testing.T, d db.DB) {
	sr, isReader := d.(db.EventsStatusReader)
	if !isReader {
		t.Fatalf("%T does not implement db.EventsStatusReader", d)
	}
	ten := tenant(t, "es")
	mkThread(t, d, ten, "t", nil)
	mkRun(t, d, ten, "t", "r")
	evs, st, err := sr.ReadEventsStatus(bg(), ten, "r", 0, 0)
	ok(t, "ReadEventsStatus", err)
	if len(evs) != 0 || evs == nil || st.Status != db.RunPending {
		t.Errorf("ReadEventsStatus of a new run = %v (nil: %v), %+v; want no events (not nil) and pending", evs, evs == nil, st)
	}
	l := claim(t, d, ten, "r", "w")
	_, err = d.AppendEvents(bg(), l, events("e", 0, 3))
	ok(t, "AppendEvents", err)
	evs, st, err = sr.ReadEventsStatus(bg(), ten, "r", 1, 1)
	ok(t, "ReadEventsStatus", err)
	if len(evs) != 1 || evs[0].Seq != 2 || evs[0].Event != "e" || string(evs[0].Data) != `{"i":1}` || evs[0].CreatedAt.IsZero() || st.Status != db.RunRunning {
		t.Errorf("ReadEventsStatus after 1, limit 1 = %+v, %+v; want seq 2 of 3, running", evs, st)
	}
	_, err = d.FinishRun(bg(), l, db.RunError, nil, "boom")
	ok(t, "FinishRun", err)
	evs, st, err = sr.ReadEventsStatus(bg(), ten, "r", 3, 0)
	ok(t, "ReadEventsStatus", err)
	if len(evs) != 0 || st.Status != db.RunError || st.Error != "boom" {
		t.Errorf("ReadEventsStatus past the end = %+v, %+v; want none, error boom", evs, st)
	}
	_, _, err = sr.ReadEventsStatus(bg(), ten, "missing", 0, 0)
	isErr(t, "ReadEventsStatus of a missing run", err, db.ErrNotFound)
	_, _, err = sr.ReadEventsStatus(bg(), tenant(t, "other"), "r", 0, 0)
	isErr(t, "ReadEventsStatus of another tenant's run", err, db.ErrNotFound)
}

// testPendingAfter checks PendingAfter: whether a pending run is due, and
// the earliest start of those that are not yet.
func testPendingAfter(t *testing.T, d db.DB) {
	pp, isPeeker := d.(db.PendingPeeker)
	if !isPeeker {
		t.Fatalf("%T does not implement db.PendingPeeker", d)
	}
	ten := tenant(t, "pa")
	now := time.Now()
	check := func(what string, wantDue bool, wantNext time.Time) {
		t.Helper()
		due, next, err := pp.PendingAfter(bg(), ten, "t", now)
		ok(t, "PendingAfter "+what, err)
		if due != wantDue || !next.Equal(wantNext) {
			t.Errorf("PendingAfter %s = %v, %v; want %v, %v", what, due, next, wantDue, wantNext)
		}
	}
	check("of a missing thread", false, time.Time{})
	mkThread(t, d, ten, "t", nil)
	check("of a thread with no run", false, time.Time{})
	later, soon := now.Add(time.Hour).Truncate(time.Microsecond), now.Add(time.Minute).Truncate(time.Microsecond)
	for id, at := range map[string]time.Time{"later": later, "soon": soon} {
		_, err := d.CreateRun(bg(), ten, db.Run{ID: id, ThreadID: "t", AssistantID: "asst", Kwargs: json.RawMessage(`{}`), NotBefore: at})
		ok(t, "CreateRun "+id, err)
	}
	check("with delayed runs only", false, soon)
	mkRun(t, d, ten, "t", "now")
	check("with a due run", true, soon)
	claim(t, d, ten, "now", "w")
	check("with the due run running", false, soon)
}

// testThreadForRun checks GetThreadForRun: the thread as GetThread reads
// it, its newest run's assistant and version, and whether a run is live.
func testThreadForRun(t *testing.T, d db.DB) {
	tr, isReader := d.(db.ThreadRunReader)
	if !isReader {
		t.Fatalf("%T does not implement db.ThreadRunReader", d)
	}
	ten := tenant(t, "tr")
	_, _, err := tr.GetThreadForRun(bg(), ten, "t")
	isErr(t, "GetThreadForRun of a missing thread", err, db.ErrNotFound)
	want := mkThread(t, d, ten, "t", db.Metadata{"k": "v"})
	check := func(what string, wantRuns db.ThreadRuns) {
		t.Helper()
		th, runs, err := tr.GetThreadForRun(bg(), ten, "t")
		ok(t, "GetThreadForRun "+what, err)
		if th.ID != want.ID || th.Metadata["k"] != "v" || !th.CreatedAt.Equal(want.CreatedAt) || runs != wantRuns {
			t.Errorf("GetThreadForRun %s = %+v, %+v; want thread %s, %+v", what, th, runs, want.ID, wantRuns)
		}
	}
	check("with no run", db.ThreadRuns{})
	_, err = d.CreateRun(bg(), ten, db.Run{ID: "r1", ThreadID: "t", AssistantID: "a1", AssistantVersion: 2, Kwargs: json.RawMessage(`{}`)})
	ok(t, "CreateRun r1", err)
	check("with a pending run", db.ThreadRuns{LatestAssistant: "a1", LatestVersion: 2, Live: true})
	l := claim(t, d, ten, "r1", "w")
	check("with a running run", db.ThreadRuns{LatestAssistant: "a1", LatestVersion: 2, Live: true})
	_, err = d.FinishRun(bg(), l, db.RunSuccess, nil, "")
	ok(t, "FinishRun", err)
	check("with an ended run", db.ThreadRuns{LatestAssistant: "a1", LatestVersion: 2})
	mkRun(t, d, ten, "t", "r2") // assistant "asst", no version named
	check("with a newer run", db.ThreadRuns{LatestAssistant: "asst", Live: true})
}
