package dbtest

import (
	"crypto/rand"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/server/db"
)

// SchemaLister is implemented by a DB under test that can list its
// tables' columns; the suite then checks that db.Tables names every
// trellis_ table and column, so a migration cannot add one that
// `trellis transfer` leaves behind.
type SchemaLister interface {
	SchemaColumns() (map[string][]string, error)
}

// exportAll pages through every table of e and keeps the rows of tenant
// ten (a key's tenant column for keys), 2 rows a page.
func exportAll(t *testing.T, e db.Exporter, ten string) map[string][]db.Row {
	t.Helper()
	out := map[string][]db.Row{}
	for _, tb := range db.Tables {
		col := tb.Index("tenant")
		var after db.Row
		for {
			page, err := e.ExportRows(bg(), tb, after, 2)
			ok(t, "ExportRows "+tb.Name, err)
			for _, r := range page {
				if err := tb.Check(r); err != nil {
					t.Fatalf("exported row: %v", err)
				}
				if r[col] == ten {
					out[tb.Name] = append(out[tb.Name], r)
				}
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1]
		}
	}
	return out
}

// testExport: every table's rows of a tenant are exported with their
// types; importing them again inserts nothing; imported under another
// tenant they read back through the API exactly as the originals
// (times, versions, TTL, sequence numbers, hashes), and a run created
// afterwards sorts after the imported ones.
func testExport(t *testing.T, d db.DB) {
	e, isExporter := d.(db.Exporter)
	if !isExporter {
		t.Skipf("%T does not implement db.Exporter", d)
	}
	if sc, isLister := d.(SchemaLister); isLister {
		schema, err := sc.SchemaColumns()
		ok(t, "SchemaColumns", err)
		spec := map[string][]string{}
		for _, tb := range db.Tables {
			for _, c := range tb.Columns {
				spec[tb.Name] = append(spec[tb.Name], c.Name)
			}
		}
		for _, cols := range schema {
			slices.Sort(cols)
		}
		for name := range spec {
			slices.Sort(spec[name])
		}
		if diff := cmp.Diff(schema, spec); diff != "" {
			t.Errorf("db.Tables does not cover the schema's trellis_ tables and columns (-schema +db.Tables):\n%s", diff)
		}
	}
	src, dst := tenant(t, "src"), tenant(t, "dst")
	_, err := d.CreateAssistant(bg(), src, db.Assistant{ID: "a", GraphID: "g", Name: "v1", Metadata: db.Metadata{"n": 1}}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	name := "v2"
	_, err = d.UpdateAssistant(bg(), src, "a", db.AssistantPatch{Name: &name, Config: json.RawMessage(`{"configurable":{"x":1}}`)})
	ok(t, "UpdateAssistant", err)
	_, err = d.CreateThread(bg(), src, db.Thread{ID: "th", Metadata: db.Metadata{"k": "v"},
		TTL: &db.TTL{Duration: time.Hour, Strategy: db.TTLKeepLatest}}, db.IfExistsRaise)
	ok(t, "CreateThread", err)
	_, err = d.PatchCheckpointMetadata(bg(), src, "th", "cp-1", db.Metadata{"note": "x"})
	ok(t, "PatchCheckpointMetadata", err)
	mkRun(t, d, src, "th", "r1")
	l := claim(t, d, src, "r1", "w")
	_, err = d.AppendEvents(bg(), l, []db.Event{{Event: "values", Data: json.RawMessage(`{"a":1}`)}, {Event: "end", Data: json.RawMessage(`null`)}})
	ok(t, "AppendEvents", err)
	_, err = d.FinishRun(bg(), l, db.RunSuccess, json.RawMessage(`{"tokens":3}`), "")
	ok(t, "FinishRun", err)
	_, err = d.CreateRun(bg(), src, db.Run{ID: "r2", ThreadID: "th", AssistantID: "a", AssistantVersion: 2})
	ok(t, "CreateRun naming a version", err)
	l2 := claim(t, d, src, "r2", "w") // running, with its lease
	mkCron(t, d, src, db.Cron{ID: "c", ThreadID: "th", Payload: json.RawMessage(`{}`), NextRunAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Enabled: true})
	_, err = d.CreateFeedback(bg(), src, db.Feedback{ID: "fb", ThreadID: "th", RunID: "r1", Key: "user_score", Comment: "ok", Value: json.RawMessage(`1`)})
	ok(t, "CreateFeedback", err)
	_, err = d.CreateDataset(bg(), src, db.Dataset{ID: "ds", Name: "qa", Criteria: json.RawMessage(`[{"evaluator":"exact"}]`)}, []db.DatasetCase{dcase("c", "q")})
	ok(t, "CreateDataset", err)
	_, err = d.CreateExperiment(bg(), src, db.Experiment{ID: "ex", DatasetID: "ds", DatasetVersion: 1, AssistantID: "a", Repetitions: 1, Concurrency: 1, Total: 1,
		Criteria: json.RawMessage(`[{"evaluator":"exact"}]`)})
	ok(t, "CreateExperiment", err)
	_, err = d.RecordExperimentResult(bg(), src, db.ExperimentResult{ExperimentID: "ex", CaseID: "c", Passed: true, Data: json.RawMessage(`{"pass":true}`)})
	ok(t, "RecordExperimentResult", err)
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	_, err = d.CreateKey(bg(), db.Key{ID: src + "-key", Tenant: src, Name: "ci", Prefix: "tk_x"}, hash)
	ok(t, "CreateKey", err)

	rows := exportAll(t, e, src)
	for _, tb := range db.Tables {
		want := map[string]int{"trellis_assistant_versions": 2, "trellis_runs": 2, "trellis_run_events": 2}[tb.Name]
		if want == 0 {
			want = 1
		}
		if got := len(rows[tb.Name]); got != want {
			t.Errorf("%s: exported %d rows of the tenant, want %d", tb.Name, got, want)
		}
		n, err := e.ImportRows(bg(), tb, rows[tb.Name])
		ok(t, "ImportRows again "+tb.Name, err)
		if n != 0 {
			t.Errorf("%s: importing present rows inserted %d", tb.Name, n)
		}
	}

	// The same rows under tenant dst (a new key ID and hash for the key).
	hash2 := make([]byte, 32)
	_, _ = rand.Read(hash2)
	for _, tb := range db.Tables {
		var moved []db.Row
		for _, r := range rows[tb.Name] {
			c := append(db.Row(nil), r...)
			c[tb.Index("tenant")] = dst
			if tb.Name == "trellis_api_keys" {
				c[tb.Index("key_id")], c[tb.Index("hash")] = dst+"-key", hash2
			}
			moved = append(moved, c)
		}
		n, err := e.ImportRows(bg(), tb, moved)
		ok(t, "ImportRows "+tb.Name, err)
		if n != len(moved) {
			t.Errorf("%s: inserted %d of %d rows", tb.Name, n, len(moved))
		}
	}
	same := func(what string, a, b any, errA, errB error) {
		t.Helper()
		ok(t, what+" (source)", errA)
		ok(t, what+" (copy)", errB)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s differs (-source +copy):\n%s", what, diff)
		}
	}
	a1, e1 := d.GetAssistant(bg(), src, "a")
	a2, e2 := d.GetAssistant(bg(), dst, "a")
	same("assistant", a1, a2, e1, e2)
	v1, e1 := d.AssistantVersions(bg(), src, "a", db.Query{})
	v2, e2 := d.AssistantVersions(bg(), dst, "a", db.Query{})
	same("assistant versions", v1, v2, e1, e2)
	t1, e1 := d.GetThread(bg(), src, "th")
	t2, e2 := d.GetThread(bg(), dst, "th")
	same("thread", t1, t2, e1, e2)
	m1, e1 := d.CheckpointMetadata(bg(), src, "th")
	m2, e2 := d.CheckpointMetadata(bg(), dst, "th")
	same("checkpoint metadata", m1, m2, e1, e2)
	r1, e1 := d.ListRuns(bg(), src, "th", db.RunQuery{})
	r2, e2 := d.ListRuns(bg(), dst, "th", db.RunQuery{})
	same("runs", r1, r2, e1, e2)
	if len(r2) != 2 || r2[0].ID != "r2" || r2[0].AssistantVersion != 2 {
		t.Errorf("copied runs %+v: want r2 first, naming assistant version 2", r2)
	}
	ev1, e1 := d.ReadEvents(bg(), src, "r1", 0, 0)
	ev2, e2 := d.ReadEvents(bg(), dst, "r1", 0, 0)
	same("events", ev1, ev2, e1, e2)
	c1, e1 := d.GetCron(bg(), src, "c")
	c2, e2 := d.GetCron(bg(), dst, "c")
	same("cron", c1, c2, e1, e2)
	ds1, e1 := d.GetDataset(bg(), src, "ds")
	ds2, e2 := d.GetDataset(bg(), dst, "ds")
	same("dataset", ds1, ds2, e1, e2)
	dc1, e1 := d.DatasetCases(bg(), src, "ds", 0)
	dc2, e2 := d.DatasetCases(bg(), dst, "ds", 0)
	same("dataset cases", dc1, dc2, e1, e2)
	fb1, e1 := d.ListFeedback(bg(), src, "th", "r1")
	fb2, e2 := d.ListFeedback(bg(), dst, "th", "r1")
	same("feedback", fb1, fb2, e1, e2)
	ex1, e1 := d.GetExperiment(bg(), src, "ex")
	ex2, e2 := d.GetExperiment(bg(), dst, "ex")
	same("experiment", ex1, ex2, e1, e2)
	er1, e1 := d.ExperimentResults(bg(), src, "ex")
	er2, e2 := d.ExperimentResults(bg(), dst, "ex")
	same("experiment results", er1, er2, e1, e2)
	k, err := d.KeyByHash(bg(), hash2)
	ok(t, "KeyByHash of the imported key", err)
	if k.Tenant != dst || k.Name != "ci" || k.Prefix != "tk_x" {
		t.Errorf("imported key %+v", k)
	}
	// The lease came along: the copy's running run is fenced by it.
	l2.Tenant = dst
	_, err = d.RenewLease(bg(), l2, time.Hour)
	ok(t, "RenewLease of the imported lease", err)
	// A new run sorts after the imported ones.
	mkRun(t, d, dst, "th", "r3")
	runs, err := d.ListRuns(bg(), dst, "th", db.RunQuery{})
	ok(t, "ListRuns", err)
	if len(runs) != 3 || runs[0].ID != "r3" {
		t.Errorf("runs after a new one: %v, want r3 first", runIDs(runs))
	}

	tb := db.Tables[0]
	if _, err := e.ImportRows(bg(), tb, []db.Row{{dst}}); err == nil {
		t.Error("ImportRows of a short row is not an error")
	}
	if _, err := e.ExportRows(bg(), tb, nil, 0); err == nil {
		t.Error("ExportRows with limit 0 is not an error")
	}
}

func runIDs(rs []db.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
