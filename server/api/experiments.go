package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
)

// DefaultExperimentConcurrency is the units an experiment runs at once
// when the request names no concurrency.
const DefaultExperimentConcurrency = 4

// experimentPoll is how often GET /experiments/{id}/stream reads the
// progress.
const experimentPoll = 250 * time.Millisecond

// UnitEnqueuer hands an experiment's unit (its index in case ×
// repetition order) to the run queue (server/queue's EnqueueUnit).
type UnitEnqueuer func(ctx context.Context, tenant, experimentID string, index int) error

// experimentHandlers returns the handlers of the experiment routes.
func (a *API) experimentHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createExperiment":      http.HandlerFunc(a.createExperiment),
		"listExperiments":       http.HandlerFunc(a.listExperiments),
		"getExperiment":         http.HandlerFunc(a.getExperiment),
		"listExperimentResults": http.HandlerFunc(a.listExperimentResults),
		"streamExperiment":      http.HandlerFunc(a.streamExperiment),
		"cancelExperiment":      http.HandlerFunc(a.cancelExperiment),
		"compareExperiments":    http.HandlerFunc(a.compareExperiments),
	}
}

func toWireExperiment(e db.Experiment, p db.ExperimentProgress) wire.Experiment {
	out := wire.Experiment{ExperimentID: e.ID, Name: e.Name, DatasetID: e.DatasetID, DatasetVersion: e.DatasetVersion, AssistantID: e.AssistantID, AssistantVersion: e.AssistantVersion,
		Repetitions: e.Repetitions, Concurrency: e.Concurrency, BaselineExperimentID: e.BaselineID, Metadata: wire.Metadata(e.Metadata),
		Status: string(e.Status), Progress: wire.ExperimentProgress{Total: e.Total, Done: p.Done, Passed: p.Passed, Failed: p.Done - p.Passed},
		Error: e.Error, CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
	if out.Metadata == nil {
		out.Metadata = wire.Metadata{}
	}
	if len(e.Summary) > 0 {
		var s eval.Summary
		if json.Unmarshal(e.Summary, &s) == nil {
			out.Summary = &s
		}
	}
	return out
}

// experiment reads an experiment with its progress.
func (a *API) experiment(ctx context.Context, tenant, id string) (db.Experiment, db.ExperimentProgress, error) {
	e, err := a.DB.GetExperiment(ctx, tenant, id)
	if err != nil {
		return e, db.ExperimentProgress{}, err
	}
	p, err := a.DB.ExperimentProgress(ctx, tenant, id)
	return e, p, err
}

func (a *API) createExperiment(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.ExperimentCreate](a, w, r)
	if !ok {
		return
	}
	if a.EnqueueUnit == nil {
		wire.NewProblem(http.StatusServiceUnavailable, "this server runs no experiments (no run queue)").Write(w, r)
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	ds, cases, err := a.datasetAt(r, b.DatasetID, b.DatasetVersion)
	if err != nil {
		if isNotFound(err) {
			wire.Invalid(wire.FieldError{Pointer: "/dataset_id", Detail: fmt.Sprintf("no dataset %q with version %d", b.DatasetID, b.DatasetVersion)}).Write(w, r)
			return
		}
		a.fail(w, r, err)
		return
	}
	if len(cases) == 0 {
		wire.Invalid(wire.FieldError{Pointer: "/dataset_id", Detail: fmt.Sprintf("dataset %q has no cases at version %d", b.DatasetID, ds.Version)}).Write(w, r)
		return
	}
	latest, err := a.DB.GetAssistant(ctx, tenant, b.AssistantID)
	if err != nil {
		if isNotFound(err) {
			wire.Invalid(wire.FieldError{Pointer: "/assistant_id", Detail: fmt.Sprintf("no assistant %q", b.AssistantID)}).Write(w, r)
			return
		}
		a.fail(w, r, err)
		return
	}
	if b.AssistantVersion > 0 {
		// Any version: its runs name it, so its own graph runs them.
		if _, err := a.assistantVersion(ctx, tenant, latest.ID, b.AssistantVersion); err != nil {
			if isNotFound(err) {
				wire.Invalid(wire.FieldError{Pointer: "/assistant_version", Detail: fmt.Sprintf("assistant %q has no version %d; list its versions with POST /assistants/%s/versions", b.AssistantID, b.AssistantVersion, b.AssistantID)}).Write(w, r)
				return
			}
			a.fail(w, r, err)
			return
		}
	}
	if b.BaselineExperimentID != "" {
		if _, err := a.DB.GetExperiment(ctx, tenant, b.BaselineExperimentID); err != nil {
			if isNotFound(err) {
				wire.Invalid(wire.FieldError{Pointer: "/baseline_experiment_id", Detail: fmt.Sprintf("no experiment %q", b.BaselineExperimentID)}).Write(w, r)
				return
			}
			a.fail(w, r, err)
			return
		}
	}
	// Every case must be runnable: its criteria (the dataset's defaults
	// when it has none) build.
	if errs := checkRunnable(ds, cases); errs != nil {
		wire.Invalid(errs...).Write(w, r)
		return
	}
	conc := b.Concurrency
	if conc == 0 {
		conc = DefaultExperimentConcurrency
	}
	total := len(cases) * b.Repetitions
	if total > db.MaxExperimentUnits {
		wire.Invalid(wire.FieldError{Pointer: "/repetitions", Detail: fmt.Sprintf("%d cases × %d repetitions is over %d units", len(cases), b.Repetitions, db.MaxExperimentUnits)}).Write(w, r)
		return
	}
	name := b.Name
	if name == "" {
		who := b.AssistantID
		if b.AssistantVersion > 0 {
			who = fmt.Sprintf("%s-v%d", who, b.AssistantVersion)
		}
		name = fmt.Sprintf("%s-%s-%s", ds.Name, who, time.Now().UTC().Format("20060102T150405"))
	}
	// The criteria are pinned with the cases: a dataset's criteria are
	// not versioned, and an edit must not change how this experiment
	// scores.
	criteria := ds.Criteria
	if len(criteria) == 0 {
		criteria = json.RawMessage("[]")
	}
	e, err := a.DB.CreateExperiment(ctx, tenant, db.Experiment{Name: name, DatasetID: ds.ID, DatasetVersion: ds.Version, AssistantID: b.AssistantID, AssistantVersion: b.AssistantVersion, Criteria: criteria,
		Repetitions: b.Repetitions, Concurrency: conc, BaselineID: b.BaselineExperimentID, Metadata: db.Metadata(b.Metadata), Total: total})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// One lane per concurrency slot: unit i, then i+conc, i+2·conc...
	for i := range min(conc, total) {
		if err := a.EnqueueUnit(ctx, tenant, e.ID, i); err != nil {
			_, _, _ = a.DB.UpdateExperiment(context.WithoutCancel(ctx), tenant, e.ID, db.ExperimentUpdate{Status: db.ExperimentError, Error: "enqueueing its units failed: " + err.Error()})
			a.fail(w, r, err)
			return
		}
	}
	wire.WriteJSON(w, r, http.StatusCreated, toWireExperiment(e, db.ExperimentProgress{}))
}

// assistantVersion finds version v of an assistant among its versions
// (db.ErrNotFound when it has none such).
func (a *API) assistantVersion(ctx context.Context, tenant, id string, v int) (db.Assistant, error) {
	return runs.AssistantVersion(ctx, a.DB, tenant, id, v)
}

// checkRunnable checks every case decodes and its criteria build.
func checkRunnable(ds db.Dataset, cases []db.DatasetCase) []wire.FieldError {
	set, err := evalDataset(ds, cases)
	if err != nil {
		return []wire.FieldError{{Pointer: "/dataset_id", Detail: err.Error()}}
	}
	r := &eval.Runner{Experiment: "check"}
	if err := r.Check(set); err != nil {
		return []wire.FieldError{{Pointer: "/dataset_id", Detail: err.Error()}}
	}
	return nil
}

// evalDataset decodes a stored dataset version for the eval package.
func evalDataset(ds db.Dataset, cases []db.DatasetCase) (*eval.Dataset, error) {
	out := &eval.Dataset{Name: ds.Name, Version: fmt.Sprint(ds.Version), Description: ds.Description}
	if len(ds.Criteria) > 0 {
		if err := json.Unmarshal(ds.Criteria, &out.Criteria); err != nil {
			return nil, fmt.Errorf("dataset %s: stored criteria: %w", ds.ID, err)
		}
	}
	for _, c := range cases {
		var ec eval.Case
		if err := json.Unmarshal(c.Data, &ec); err != nil {
			return nil, fmt.Errorf("dataset %s: stored case %s: %w", ds.ID, c.ID, err)
		}
		out.Cases = append(out.Cases, ec)
	}
	return out, nil
}

func (a *API) listExperiments(w http.ResponseWriter, r *http.Request) {
	q, ok := decodeQuery[wire.ExperimentListQuery](w, r)
	if !ok {
		return
	}
	dq := db.ExperimentQuery{DatasetID: q.DatasetID, AssistantID: q.AssistantID, Offset: q.Offset, Limit: wire.DefaultLimit}
	if q.Limit != nil {
		dq.Limit = *q.Limit
	}
	tenant := a.tenant(r)
	found, err := a.DB.SearchExperiments(r.Context(), tenant, dq)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]wire.Experiment, 0, len(found))
	for _, e := range found {
		p, err := a.DB.ExperimentProgress(r.Context(), tenant, e.ID)
		if err != nil && !isNotFound(err) {
			a.fail(w, r, err)
			return
		}
		out = append(out, toWireExperiment(e, p))
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) getExperiment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "experiment_id")
	if !ok {
		return
	}
	e, p, err := a.experiment(r.Context(), a.tenant(r), id)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireExperiment(e, p))
}

// orderedResults returns an experiment's results in the dataset's case
// order, then by repetition.
func (a *API) orderedResults(ctx context.Context, tenant string, e db.Experiment) ([]wire.ExperimentResult, error) {
	rows, err := a.DB.ExperimentResults(ctx, tenant, e.ID)
	if err != nil {
		return nil, err
	}
	pos := map[string]int{}
	if cases, err := a.DB.DatasetCases(ctx, tenant, e.DatasetID, e.DatasetVersion); err == nil {
		for i, c := range cases {
			pos[c.ID] = i
		}
	}
	out := make([]wire.ExperimentResult, len(rows))
	for i, row := range rows {
		if err := json.Unmarshal(row.Data, &out[i]); err != nil {
			return nil, fmt.Errorf("experiment %s: stored result of case %s: %w", e.ID, row.CaseID, err)
		}
		out[i].CaseID, out[i].Repetition, out[i].Passed = row.CaseID, row.Repetition, row.Passed
		if out[i].Scores == nil {
			out[i].Scores = []wire.ExperimentScore{}
		}
	}
	sortResults(out, pos)
	return out, nil
}

func (a *API) listExperimentResults(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "experiment_id")
	if !ok {
		return
	}
	tenant := a.tenant(r)
	e, err := a.DB.GetExperiment(r.Context(), tenant, id)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	out, err := a.orderedResults(r.Context(), tenant, e)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) streamExperiment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "experiment_id")
	if !ok {
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	e, p, err := a.experiment(ctx, tenant, id)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	sw, err := sse.NewWriter(w, r, sse.Options{})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer sw.Close()
	var last wire.ExperimentProgressEvent
	tick := time.NewTicker(experimentPoll)
	defer tick.Stop()
	for first := true; ; first = false {
		ev := wire.ExperimentProgressEvent{ExperimentID: e.ID, Status: string(e.Status),
			Progress: wire.ExperimentProgress{Total: e.Total, Done: p.Done, Passed: p.Passed, Failed: p.Done - p.Passed}}
		if first || ev != last {
			b, _ := json.Marshal(ev) // plain fields always encode
			if sw.Send(sse.Event{Event: "progress", Data: b}) != nil {
				return
			}
			last = ev
		}
		if e.Status.Terminal() {
			b, _ := json.Marshal(toWireExperiment(e, p))
			_ = sw.Send(sse.Event{Event: "end", Data: b})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if e, p, err = a.experiment(ctx, tenant, id); err != nil {
			if errors.Is(err, db.ErrNotFound) {
				_ = sw.Send(sse.Event{Event: "error", Data: fmt.Appendf(nil, `{"error":"not_found","message":"experiment %s was deleted"}`, id)})
			}
			return
		}
	}
}

func (a *API) cancelExperiment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "experiment_id")
	if !ok {
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	e, changed, err := a.DB.UpdateExperiment(ctx, tenant, id, db.ExperimentUpdate{Status: db.ExperimentCancelled})
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	if !changed && e.Status != db.ExperimentCancelled {
		wire.NewProblem(http.StatusConflict, fmt.Sprintf("experiment %s already ended (%s)", id, e.Status)).Write(w, r)
		return
	}
	p, err := a.DB.ExperimentProgress(ctx, tenant, id)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireExperiment(e, p))
}

// asEvalExperiment rebuilds the eval package's experiment from the
// stored results, for its summary and comparison.
func (a *API) asEvalExperiment(ctx context.Context, tenant string, e db.Experiment) (*eval.Experiment, error) {
	results, err := a.orderedResults(ctx, tenant, e)
	if err != nil {
		return nil, err
	}
	out := &eval.Experiment{Name: e.ID, Target: e.AssistantID, Repeat: e.Repetitions, DatasetVersion: fmt.Sprint(e.DatasetVersion),
		Started: e.CreatedAt, Finished: e.UpdatedAt}
	for _, res := range results {
		if n := len(out.Cases); n == 0 || out.Cases[n-1].ID != res.CaseID {
			out.Cases = append(out.Cases, eval.CaseResult{ID: res.CaseID})
		}
		t := eval.TrialResult{Case: res.CaseID, Repetition: res.Repetition, ThreadID: res.ThreadID, Pass: res.Passed, Error: res.Error,
			Output: res.Output, Latency: time.Duration(res.LatencyMS) * time.Millisecond}
		for _, s := range res.Scores {
			t.Scores = append(t.Scores, eval.CriterionResult{Evaluator: s.Evaluator, Score: s.Score, Pass: s.Passed, Explanation: s.Explanation})
		}
		c := &out.Cases[len(out.Cases)-1]
		c.Trials = append(c.Trials, t)
	}
	out.Summarize()
	return out, nil
}

func (a *API) compareExperiments(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "experiment_id")
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.ExperimentCompareQuery](w, r)
	if !ok {
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	cur, err := a.DB.GetExperiment(ctx, tenant, id)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", id)
		return
	}
	baseID := q.Baseline
	if baseID == "" {
		baseID = cur.BaselineID
	}
	if baseID == "" {
		wire.Invalid(wire.FieldError{Pointer: "/baseline", Detail: "name the baseline experiment (the experiment has no baseline_experiment_id)"}).Write(w, r)
		return
	}
	base, err := a.DB.GetExperiment(ctx, tenant, baseID)
	if err != nil {
		a.notFoundOr(w, r, err, "experiment", baseID)
		return
	}
	be, err := a.asEvalExperiment(ctx, tenant, base)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ce, err := a.asEvalExperiment(ctx, tenant, cur)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, eval.Compare(be, ce, 1))
}
