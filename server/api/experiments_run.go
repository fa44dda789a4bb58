package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// UnitTimeout bounds one unit: its runs, answers and scoring.
const UnitTimeout = 10 * time.Minute

// unitCutAttempts is the attempt up to which a unit whose trial was cut
// (see unitCut) is run again rather than recorded as failed.
const unitCutAttempts = 3

// unitCut reports whether a unit's trial was cut short rather than
// decided, from typed facts and never from an error's text (an agent's
// own failure may well say "context canceled"): the unit's context ended
// (its replica is stopping, so the trial stopped waiting), or the trial
// failed while the run service ended its run in success — the failure the
// trial saw was a worker stopping under the run, which another worker
// then took over and finished. A run whose worker stops is left running
// for takeover, never ended with the cut as its error, so a run ended in
// error, timeout or interrupted is the agent's result, recorded as is.
func unitCut(ctx context.Context, trialErr string, run db.RunStatus) bool {
	if ctx.Err() != nil {
		return true
	}
	return trialErr != "" && run == db.RunSuccess
}

// unitOperations are the routes a unit drives its case through, as a
// client would: create the thread, run and wait (answers to interrupts
// are further runs with a resume command), read the state and history.
var unitOperations = []string{"createThread", "waitRun", "getThreadState", "getThreadHistory"}

// sortResults orders results by the dataset's case order (pos; unknown
// cases last, by ID), then by repetition.
func sortResults(rs []wire.ExperimentResult, pos map[string]int) {
	at := func(id string) int {
		if p, ok := pos[id]; ok {
			return p
		}
		return len(pos)
	}
	slices.SortStableFunc(rs, func(x, y wire.ExperimentResult) int {
		if c := at(x.CaseID) - at(y.CaseID); c != 0 {
			return c
		}
		if c := strings.Compare(x.CaseID, y.CaseID); c != 0 {
			return c
		}
		return x.Repetition - y.Repetition
	})
}

// tenantHandler serves the unit operations for one tenant, in process.
func (a *API) tenantHandler(tenant string) (http.Handler, error) {
	b := *a
	b.Tenant = func(*http.Request) string { return tenant }
	handlers := b.Handlers()
	mux := http.NewServeMux()
	for _, r := range spec.Routes() {
		if slices.Contains(unitOperations, r.OperationID) {
			mux.Handle(r.MuxPattern(), handlers[r.OperationID])
		}
	}
	return mux, nil
}

// handlerTransport answers HTTP requests with a handler, in process: the
// unit's client goes through the same handlers (and so the same run
// service and run queue) as an SDK client, without a socket.
type handlerTransport struct{ h http.Handler }

// RoundTrip serves req with the handler and returns its answer.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	res := rec.Result()
	res.Request = req
	return res, nil
}

// unitThreadExperiment names a unit's attempt for eval.ThreadID, so each
// attempt of each unit runs on a fresh thread of its own.
func unitThreadExperiment(experimentID string, rep, attempt int) string {
	return fmt.Sprintf("%s/rep%d/attempt%d", experimentID, rep, attempt)
}

// RunExperimentUnit runs one unit of an experiment — the case ×
// repetition at index — and records its result once. It is the run
// queue's unit worker, on any replica; it is idempotent: a unit already
// recorded is not run again, and a result recorded by another attempt is
// kept. After recording it enqueues the next unit of its lane (index +
// concurrency) and ends the experiment when every unit is recorded. An
// error makes the queue try the unit again.
func (a *API) RunExperimentUnit(ctx context.Context, tenant, experimentID string, index, attempt int) error {
	e, err := a.DB.GetExperiment(ctx, tenant, experimentID)
	if errors.Is(err, db.ErrNotFound) {
		return nil // deleted with its dataset
	}
	if err != nil {
		return err
	}
	if e.Status.Terminal() {
		return nil // cancelled or ended: the lane stops
	}
	if e.Status == db.ExperimentPending {
		if _, _, err := a.DB.UpdateExperiment(ctx, tenant, e.ID, db.ExperimentUpdate{Status: db.ExperimentRunning}); err != nil {
			return err
		}
	}
	ds, err := a.DB.GetDataset(ctx, tenant, e.DatasetID)
	if err != nil {
		return a.failExperiment(ctx, tenant, e, err)
	}
	cases, err := a.DB.DatasetCases(ctx, tenant, e.DatasetID, e.DatasetVersion)
	if err != nil {
		return a.failExperiment(ctx, tenant, e, err)
	}
	ds.Version = e.DatasetVersion
	if e.Criteria != nil {
		ds.Criteria = e.Criteria // as the experiment pinned them
	}
	set, err := evalDataset(ds, cases)
	if err != nil {
		return a.failExperiment(ctx, tenant, e, err)
	}
	ci, rep := index/e.Repetitions, index%e.Repetitions
	if ci >= len(set.Cases) {
		return a.finish(ctx, tenant, e)
	}
	c := set.Cases[ci]
	if attempt > 1 {
		// A retry: the unit may have been recorded before its replica
		// stopped.
		done, err := a.unitRecorded(ctx, tenant, e.ID, c.ID, rep)
		if err != nil {
			return err
		}
		if done {
			return a.next(ctx, tenant, e, index)
		}
	}
	if e.AssistantVersion > 0 {
		_, err := a.assistantVersion(ctx, tenant, e.AssistantID, e.AssistantVersion)
		if errors.Is(err, db.ErrNotFound) {
			return a.failExperiment(ctx, tenant, e, fmt.Errorf("assistant %s has no version %d any more: %w", e.AssistantID, e.AssistantVersion, err))
		}
		if err != nil {
			return err
		}
	}
	res, run, err := a.runUnit(ctx, tenant, e, set, c, rep, attempt)
	if err != nil {
		return err
	}
	if unitCut(ctx, res.Error, run) && attempt < unitCutAttempts {
		return fmt.Errorf("unit %s/%d: its trial was cut (run status %q: %s); it runs again on a fresh thread", c.ID, rep, run, res.Error)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if _, err := a.DB.RecordExperimentResult(ctx, tenant, db.ExperimentResult{ExperimentID: e.ID, CaseID: c.ID, Repetition: rep,
		Passed: res.Passed, Data: data}); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		return err
	}
	return a.next(ctx, tenant, e, index)
}

// unitRecorded reports whether the unit has a result.
func (a *API) unitRecorded(ctx context.Context, tenant, experimentID, caseID string, rep int) (bool, error) {
	rs, err := a.DB.ExperimentResults(ctx, tenant, experimentID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(rs, func(r db.ExperimentResult) bool { return r.CaseID == caseID && r.Repetition == rep }), nil
}

// next enqueues the lane's next unit, or ends the experiment when every
// unit is recorded.
func (a *API) next(ctx context.Context, tenant string, e db.Experiment, index int) error {
	if n := index + e.Concurrency; n < e.Total {
		if err := a.EnqueueUnit(ctx, tenant, e.ID, n); err != nil {
			return err
		}
	}
	return a.finish(ctx, tenant, e)
}

// finish ends the experiment with its summary once every unit is
// recorded; of replicas finishing at once, one writes it.
func (a *API) finish(ctx context.Context, tenant string, e db.Experiment) error {
	p, err := a.DB.ExperimentProgress(ctx, tenant, e.ID)
	if err != nil || p.Done < e.Total {
		return err
	}
	ee, err := a.asEvalExperiment(ctx, tenant, e)
	if err != nil {
		return err
	}
	summary, err := json.Marshal(ee.Summary)
	if err != nil {
		return err
	}
	_, _, err = a.DB.UpdateExperiment(ctx, tenant, e.ID, db.ExperimentUpdate{Status: db.ExperimentSuccess, Summary: summary})
	return err
}

// failExperiment ends the experiment in error (its dataset or assistant
// went away); the unit's job completes.
func (a *API) failExperiment(ctx context.Context, tenant string, e db.Experiment, cause error) error {
	_, _, err := a.DB.UpdateExperiment(ctx, tenant, e.ID, db.ExperimentUpdate{Status: db.ExperimentError, Error: cause.Error()})
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// runUnit runs case c at repetition rep on a fresh thread through the
// tenant's own handlers, scores it with the case's criteria (the
// dataset's by default) and returns its result with the status of its
// latest run ("" when it has none).
func (a *API) runUnit(ctx context.Context, tenant string, e db.Experiment, set *eval.Dataset, c eval.Case, rep, attempt int) (wire.ExperimentResult, db.RunStatus, error) {
	h, err := a.tenantHandler(tenant)
	if err != nil {
		return wire.ExperimentResult{}, "", err
	}
	// A pinned version is named by the case's first run; the run service
	// keeps it for the thread's later runs (the answers).
	target := &eval.ServerTarget{URL: "http://trellis.internal", Assistant: e.AssistantID, AssistantVersion: e.AssistantVersion,
		Client: &http.Client{Transport: handlerTransport{h}}}
	runner := &eval.Runner{Target: target, Experiment: unitThreadExperiment(e.ID, rep, attempt), Repeat: 1, Concurrency: 1, Timeout: UnitTimeout}
	one := &eval.Dataset{Name: set.Name, Version: set.Version, Criteria: set.Criteria, Cases: []eval.Case{c}}
	exp, err := runner.Run(ctx, one)
	if err != nil {
		return wire.ExperimentResult{}, "", fmt.Errorf("unit %s/%d: %w", c.ID, rep, err)
	}
	if len(exp.Cases) != 1 || len(exp.Cases[0].Trials) != 1 {
		return wire.ExperimentResult{}, "", fmt.Errorf("unit %s/%d: the runner returned no trial", c.ID, rep)
	}
	t := exp.Cases[0].Trials[0]
	res := wire.ExperimentResult{CaseID: c.ID, Repetition: rep, Passed: t.Pass, ThreadID: t.ThreadID, Output: t.Output,
		LatencyMS: t.Latency.Milliseconds(), Error: t.Error, Scores: []wire.ExperimentScore{}}
	for _, s := range t.Scores {
		expl := s.Explanation
		if s.Error != "" {
			expl = strings.TrimSpace(expl + " (evaluator error: " + s.Error + ")")
		}
		res.Scores = append(res.Scores, wire.ExperimentScore{Evaluator: s.Evaluator, Score: s.Score, Passed: s.Pass, Explanation: expl})
	}
	var status db.RunStatus
	if rs, err := a.DB.ListRuns(ctx, tenant, t.ThreadID, db.RunQuery{Limit: 1}); err == nil && len(rs) > 0 {
		res.RunID, status = rs[0].ID, rs[0].Status
	}
	return res, status, nil
}
