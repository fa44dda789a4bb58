package api

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// A unit runs its case on a fresh thread as a client would (the case's
// answer sent to the graph's question), is scored and recorded, and
// enqueues the next unit of its lane; a retry of a recorded unit runs
// nothing and records nothing; the last unit ends the experiment with its
// summary; a cancelled experiment's units do nothing.
func TestExperimentUnits(t *testing.T) {
	e := newRunEnv(t)
	ctx := context.Background()
	d := e.api.DB
	var enqueued []int
	e.api.EnqueueUnit = func(_ context.Context, tenant, id string, index int) error {
		enqueued = append(enqueued, index)
		return nil
	}
	ds, err := d.CreateDataset(ctx, DefaultTenant, db.Dataset{Name: "ask", Criteria: json.RawMessage(`[{"evaluator":"contains","params":{"values":["answer blue"]}}]`)},
		[]db.DatasetCase{{ID: "c1", Data: json.RawMessage(`{"id":"c1","input":{"state":{"log":["ask"]}},"answers":[{"value":"blue"}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := d.CreateExperiment(ctx, DefaultTenant, db.Experiment{DatasetID: ds.ID, DatasetVersion: 1, AssistantID: "steps-a", Repetitions: 2, Concurrency: 1, Total: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.api.RunExperimentUnit(ctx, DefaultTenant, exp.ID, 0, 1); err != nil {
		t.Fatal(err)
	}
	results := func() []wire.ExperimentResult {
		t.Helper()
		got, err := d.GetExperiment(ctx, DefaultTenant, exp.ID)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := e.api.orderedResults(ctx, DefaultTenant, got)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rs := results()
	if len(rs) != 1 || !rs[0].Passed || rs[0].CaseID != "c1" || rs[0].Repetition != 0 || rs[0].RunID == "" || len(enqueued) != 1 || enqueued[0] != 1 {
		t.Fatalf("after unit 0: results %+v, enqueued %v", rs, enqueued)
	}
	// The criterion looks for "answer blue" in the final state: the
	// question was answered from the case.
	if len(rs[0].Scores) != 1 || rs[0].Scores[0].Evaluator != "contains" || rs[0].Scores[0].Score != 1 {
		t.Fatalf("unit 0 did not answer the question or was not scored: %+v", rs[0])
	}
	th, err := d.GetThread(ctx, DefaultTenant, rs[0].ThreadID)
	if err != nil || th.Metadata["eval_case"] != "c1" {
		t.Fatalf("the unit's thread: %+v %v", th, err)
	}
	if got, _ := d.GetExperiment(ctx, DefaultTenant, exp.ID); got.Status != db.ExperimentRunning {
		t.Fatalf("status %s after the first unit, want running", got.Status)
	}

	// A retry of the recorded unit: nothing runs, nothing changes; the
	// lane's next unit is enqueued again (the queue drops the duplicate).
	threads, _ := d.SearchThreads(ctx, DefaultTenant, db.ThreadQuery{})
	if err := e.api.RunExperimentUnit(ctx, DefaultTenant, exp.ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	again, _ := d.SearchThreads(ctx, DefaultTenant, db.ThreadQuery{})
	if rs2 := results(); len(rs2) != 1 || rs2[0].ThreadID != rs[0].ThreadID || len(again) != len(threads) {
		t.Fatalf("the retry of a recorded unit ran again: %+v, threads %d then %d", rs2, len(threads), len(again))
	}

	// The last unit ends the experiment with its summary.
	if err := e.api.RunExperimentUnit(ctx, DefaultTenant, exp.ID, 1, 1); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetExperiment(ctx, DefaultTenant, exp.ID)
	if err != nil || got.Status != db.ExperimentSuccess || len(got.Summary) == 0 {
		t.Fatalf("after the last unit: %+v %v", got, err)
	}
	w := toWireExperiment(got, db.ExperimentProgress{Done: 2, Passed: 2})
	if w.Summary == nil || w.Summary.Trials != 2 || w.Summary.TrialsPassed != 2 || w.Summary.K != 2 {
		t.Fatalf("summary %+v", w.Summary)
	}
	if rs := results(); len(rs) != 2 || rs[0].ThreadID == rs[1].ThreadID {
		t.Fatalf("two repetitions, two threads: %+v", rs)
	}

	// A cancelled experiment's units run nothing.
	exp2, err := d.CreateExperiment(ctx, DefaultTenant, db.Experiment{DatasetID: ds.ID, DatasetVersion: 1, AssistantID: "steps-a", Repetitions: 1, Concurrency: 1, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.UpdateExperiment(ctx, DefaultTenant, exp2.ID, db.ExperimentUpdate{Status: db.ExperimentCancelled}); err != nil {
		t.Fatal(err)
	}
	if err := e.api.RunExperimentUnit(ctx, DefaultTenant, exp2.ID, 0, 1); err != nil {
		t.Fatal(err)
	}
	if p, _ := d.ExperimentProgress(ctx, DefaultTenant, exp2.ID); p.Done != 0 {
		t.Fatalf("a cancelled experiment recorded %d units", p.Done)
	}
}
