package dbtest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

func mkExperiment(t *testing.T, d db.DB, ten, dataset, assistant string) db.Experiment {
	t.Helper()
	e, err := d.CreateExperiment(bg(), ten, db.Experiment{Name: "exp", DatasetID: dataset, DatasetVersion: 1, AssistantID: assistant,
		Repetitions: 2, Concurrency: 3, Metadata: db.Metadata{"k": "v"}, Total: 4})
	ok(t, "CreateExperiment", err)
	return e
}

// testExperiments: an experiment is created pending on an existing
// dataset, searched by dataset and assistant, moved to running and to a
// terminal status that no later update changes; another tenant sees none
// of it; deleting the dataset deletes it.
func testExperiments(t *testing.T, d db.DB) {
	ten, other := tenant(t, "t"), tenant(t, "o")
	ds, err := d.CreateDataset(bg(), ten, db.Dataset{Name: "qa"}, []db.DatasetCase{dcase("a", "one"), dcase("b", "two")})
	ok(t, "CreateDataset", err)
	_, err = d.CreateExperiment(bg(), ten, db.Experiment{DatasetID: "missing", DatasetVersion: 1, AssistantID: "x", Repetitions: 1, Concurrency: 1})
	isErr(t, "an experiment on a missing dataset", err, db.ErrNotFound)
	_, err = d.CreateExperiment(bg(), ten, db.Experiment{DatasetID: ds.ID, DatasetVersion: 1, AssistantID: "x", Repetitions: 0, Concurrency: 1})
	isErr(t, "zero repetitions", err, db.ErrInvalid)
	_, err = d.CreateExperiment(bg(), other, db.Experiment{DatasetID: ds.ID, DatasetVersion: 1, AssistantID: "x", Repetitions: 1, Concurrency: 1})
	isErr(t, "an experiment on another tenant's dataset", err, db.ErrNotFound)
	_, err = d.CreateExperiment(bg(), ten, db.Experiment{DatasetID: ds.ID, DatasetVersion: 1, AssistantID: "x", AssistantVersion: -1, Repetitions: 1, Concurrency: 1})
	isErr(t, "a negative assistant version", err, db.ErrInvalid)
	pinTen := tenant(t, "p")
	pds, err := d.CreateDataset(bg(), pinTen, db.Dataset{Name: "qa"}, []db.DatasetCase{dcase("a", "one")})
	ok(t, "CreateDataset", err)
	pin, err := d.CreateExperiment(bg(), pinTen, db.Experiment{DatasetID: pds.ID, DatasetVersion: 1, AssistantID: "x", AssistantVersion: 3, Repetitions: 1, Concurrency: 1, Total: 1,
		Criteria: json.RawMessage(`[{"evaluator":"contains"}]`)})
	ok(t, "CreateExperiment pinned to a version", err)
	if got, err := d.GetExperiment(bg(), pinTen, pin.ID); err != nil || got.AssistantVersion != 3 || pin.AssistantVersion != 3 {
		t.Fatalf("pinned experiment: created %+v, read %+v, %v: want assistant version 3", pin, got, err)
	}
	if got, err := d.GetExperiment(bg(), pinTen, pin.ID); err != nil {
		t.Fatal(err)
	} else {
		jsonEq(t, "pinned criteria", got.Criteria, `[{"evaluator":"contains"}]`)
	}
	_, err = d.CreateExperiment(bg(), pinTen, db.Experiment{DatasetID: pds.ID, DatasetVersion: 1, AssistantID: "x", Repetitions: 1, Concurrency: 1, Criteria: json.RawMessage(`[{`)})
	isErr(t, "criteria that are not JSON", err, db.ErrInvalid)

	e1 := mkExperiment(t, d, ten, ds.ID, "a1")
	e2 := mkExperiment(t, d, ten, ds.ID, "a2")
	if e1.ID == "" || e1.Status != db.ExperimentPending || e1.Repetitions != 2 || e1.Concurrency != 3 || e1.Total != 4 ||
		e1.Metadata["k"] != "v" || e1.Summary != nil || e1.DatasetVersion != 1 || e1.Criteria != nil {
		t.Fatalf("created %+v", e1)
	}
	got, err := d.GetExperiment(bg(), ten, e1.ID)
	ok(t, "GetExperiment", err)
	if got.ID != e1.ID || got.AssistantID != "a1" || !got.CreatedAt.Equal(e1.CreatedAt) {
		t.Fatalf("read back %+v, want %+v", got, e1)
	}
	_, err = d.GetExperiment(bg(), other, e1.ID)
	isErr(t, "another tenant's experiment", err, db.ErrNotFound)

	list, err := d.SearchExperiments(bg(), ten, db.ExperimentQuery{})
	ok(t, "SearchExperiments", err)
	sameIDs(t, "all, newest first", ids(list, func(e db.Experiment) string { return e.ID }), []string{e2.ID, e1.ID})
	list, err = d.SearchExperiments(bg(), ten, db.ExperimentQuery{AssistantID: "a1", DatasetID: ds.ID})
	ok(t, "SearchExperiments by assistant", err)
	sameIDs(t, "by assistant", ids(list, func(e db.Experiment) string { return e.ID }), []string{e1.ID})
	list, err = d.SearchExperiments(bg(), ten, db.ExperimentQuery{Limit: 1, Offset: 1})
	ok(t, "SearchExperiments paged", err)
	sameIDs(t, "second page", ids(list, func(e db.Experiment) string { return e.ID }), []string{e1.ID})
	list, err = d.SearchExperiments(bg(), other, db.ExperimentQuery{})
	ok(t, "SearchExperiments of another tenant", err)
	if len(list) != 0 {
		t.Fatalf("another tenant found %d experiments", len(list))
	}

	e, changed, err := d.UpdateExperiment(bg(), ten, e1.ID, db.ExperimentUpdate{Status: db.ExperimentRunning})
	ok(t, "UpdateExperiment running", err)
	if !changed || e.Status != db.ExperimentRunning {
		t.Fatalf("to running: changed %v status %s", changed, e.Status)
	}
	e, changed, err = d.UpdateExperiment(bg(), ten, e1.ID, db.ExperimentUpdate{Status: db.ExperimentSuccess, Summary: json.RawMessage(`{"cases":2}`)})
	ok(t, "UpdateExperiment success", err)
	if !changed || e.Status != db.ExperimentSuccess {
		t.Fatalf("to success: changed %v status %s", changed, e.Status)
	}
	jsonEq(t, "summary", e.Summary, `{"cases":2}`)
	e, changed, err = d.UpdateExperiment(bg(), ten, e1.ID, db.ExperimentUpdate{Status: db.ExperimentCancelled, Error: "late"})
	ok(t, "UpdateExperiment after the end", err)
	if changed || e.Status != db.ExperimentSuccess || e.Error != "" {
		t.Fatalf("a terminal experiment changed: %v %s %q", changed, e.Status, e.Error)
	}
	_, _, err = d.UpdateExperiment(bg(), ten, e2.ID, db.ExperimentUpdate{Status: "done"})
	isErr(t, "an unknown status", err, db.ErrInvalid)
	_, _, err = d.UpdateExperiment(bg(), other, e2.ID, db.ExperimentUpdate{Status: db.ExperimentCancelled})
	isErr(t, "another tenant's update", err, db.ErrNotFound)
	if e, _ := d.GetExperiment(bg(), ten, e2.ID); e.Status != db.ExperimentPending {
		t.Fatalf("another tenant's update changed the experiment to %s", e.Status)
	}

	ok(t, "DeleteDataset", d.DeleteDataset(bg(), ten, ds.ID))
	_, err = d.GetExperiment(bg(), ten, e2.ID)
	isErr(t, "an experiment of a deleted dataset", err, db.ErrNotFound)
}

// testExperimentResultsOnce: a unit's result is recorded once, however
// many writers race to record it; results list by case and repetition
// and count in the progress.
func testExperimentResultsOnce(t *testing.T, d db.DB) {
	ten, other := tenant(t, "t"), tenant(t, "o")
	ds, err := d.CreateDataset(bg(), ten, db.Dataset{Name: "qa"}, []db.DatasetCase{dcase("a", "one"), dcase("b", "two")})
	ok(t, "CreateDataset", err)
	e := mkExperiment(t, d, ten, ds.ID, "asst")
	res := func(c string, rep int, pass bool, writer int) db.ExperimentResult {
		return db.ExperimentResult{ExperimentID: e.ID, CaseID: c, Repetition: rep, Passed: pass, Data: json.RawMessage(fmt.Sprintf(`{"writer":%d}`, writer))}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	inserted := 0
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := d.RecordExperimentResult(bg(), ten, res("b", 1, true, w))
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			if in {
				mu.Lock()
				inserted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if inserted != 1 {
		t.Fatalf("%d writers inserted the same unit, want 1", inserted)
	}
	in, err := d.RecordExperimentResult(bg(), ten, res("a", 0, false, 9))
	ok(t, "RecordExperimentResult", err)
	if !in {
		t.Fatal("a new unit was not inserted")
	}
	_, err = d.RecordExperimentResult(bg(), other, res("a", 1, true, 9))
	isErr(t, "another tenant's result", err, db.ErrNotFound)
	_, err = d.RecordExperimentResult(bg(), ten, db.ExperimentResult{ExperimentID: e.ID, CaseID: "a", Repetition: -1, Data: json.RawMessage(`{}`)})
	isErr(t, "a negative repetition", err, db.ErrInvalid)

	rs, err := d.ExperimentResults(bg(), ten, e.ID)
	ok(t, "ExperimentResults", err)
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s/%d/%v", r.CaseID, r.Repetition, r.Passed))
	}
	sameIDs(t, "results", got, []string{"a/0/false", "b/1/true"})
	p, err := d.ExperimentProgress(bg(), ten, e.ID)
	ok(t, "ExperimentProgress", err)
	if p.Done != 2 || p.Passed != 1 {
		t.Fatalf("progress %+v, want 2 done, 1 passed", p)
	}
	_, err = d.ExperimentResults(bg(), other, e.ID)
	isErr(t, "another tenant's results", err, db.ErrNotFound)
}
