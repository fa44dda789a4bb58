package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// runHandlers returns the handlers of the run routes: runs on a thread,
// stateless runs on a temporary thread, their streams, waits and cancels.
func (a *API) runHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createRun":              http.HandlerFunc(a.createRun),
		"streamRun":              http.HandlerFunc(a.streamRun),
		"waitRun":                http.HandlerFunc(a.waitRun),
		"listRuns":               http.HandlerFunc(a.listRuns),
		"getRun":                 http.HandlerFunc(a.getRun),
		"deleteRun":              http.HandlerFunc(a.deleteRun),
		"cancelRun":              http.HandlerFunc(a.cancelRun),
		"cancelRuns":             http.HandlerFunc(a.cancelRuns),
		"joinRun":                http.HandlerFunc(a.joinRun),
		"joinRunStream":          http.HandlerFunc(a.joinRunStream),
		"joinThreadStream":       http.HandlerFunc(a.joinThreadStream),
		"createStatelessRun":     http.HandlerFunc(a.createStatelessRun),
		"streamStatelessRun":     http.HandlerFunc(a.streamStatelessRun),
		"waitStatelessRun":       http.HandlerFunc(a.waitStatelessRun),
		"createRunBatch":         http.HandlerFunc(a.createRunBatch),
		"joinStatelessRunStream": http.HandlerFunc(a.joinStatelessRunStream),
	}
}

// runErrors maps the store's and the run service's errors to statuses.
var runErrors = []wire.ErrorStatus{
	{Err: db.ErrNotFound, Status: http.StatusNotFound},
	{Err: db.ErrConflict, Status: http.StatusConflict},
	{Err: db.ErrBusy, Status: http.StatusConflict},
	{Err: runs.ErrThreadBusy, Status: http.StatusConflict},
	{Err: db.ErrInvalid, Status: http.StatusUnprocessableEntity},
}

// runProblem turns an error of a run handler into the problem to answer:
// an *runs.InputError is a 422 naming its field; a 5xx is logged.
func runProblem(r *http.Request, err error) *wire.Problem {
	var ie *runs.InputError
	if errors.As(err, &ie) {
		return wire.Invalid(wire.FieldError{Pointer: ie.Pointer, Detail: ie.Detail})
	}
	p := wire.FromError(err, runErrors...)
	if p.Status >= 500 {
		slog.Error("run request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return p
}

// fail writes the problem for err.
func fail(w http.ResponseWriter, r *http.Request, err error) { runProblem(r, err).Write(w, r) }

// runPath is the run's resource path (Content-Location: the SDK reads the
// run and thread IDs from it).
func runPath(thread, run string) string { return "/threads/" + thread + "/runs/" + run }

// setRunHeaders sets Content-Location (the run) and Location (its stream,
// where the SDK reconnects a dropped stream).
func setRunHeaders(h http.Header, run db.Run) {
	h.Set("Content-Location", runPath(run.ThreadID, run.ID))
	h.Set("Location", runPath(run.ThreadID, run.ID)+"/stream")
}

// dropModes are stream modes the wire accepts that produce no events.
var dropModes = []wire.StreamMode{wire.StreamEvents, wire.StreamTools, wire.StreamLifecycle}

// createRequest turns a run-create body into the run service's request.
// thread is the thread of the path, or a new temporary one (stateless).
// workerDeletes makes the executor delete a temporary thread when the run
// ends (background stateless runs; a stream or wait deletes it itself,
// after it has read the run's events).
func (a *API) createRequest(tenant, thread string, b *wire.RunCreate, stateless, workerDeletes bool) (runs.CreateRequest, *wire.Problem) {
	if b.Checkpoint != nil && b.Checkpoint.ThreadID != "" && b.Checkpoint.ThreadID != thread && !stateless {
		return runs.CreateRequest{}, wire.Invalid(wire.FieldError{Pointer: "/checkpoint/thread_id",
			Detail: fmt.Sprintf("names thread %q but the path names %q; leave it out or send the same", b.Checkpoint.ThreadID, thread)})
	}
	kw := runs.Kwargs{
		Input: b.Input, Context: b.Context, CheckpointID: b.EffectiveCheckpointID(),
		Durability: string(b.EffectiveDurability()), StreamSubgraphs: b.StreamSubgraphs,
		TemporaryThread: stateless && workerDeletes && b.OnCompletion != wire.OnCompletionKeep,
		Webhook:         b.Webhook,
	}
	if b.Command != nil {
		c := &runs.Command{Resume: b.Command.Resume}
		if b.Command.Update != nil {
			u, err := json.Marshal(b.Command.Update)
			if err != nil {
				return runs.CreateRequest{}, wire.Invalid(wire.FieldError{Pointer: "/command/update", Detail: err.Error()})
			}
			c.Update = u
		}
		if len(b.Command.Goto) > 0 {
			g, err := json.Marshal(b.Command.Goto)
			if err != nil {
				return runs.CreateRequest{}, wire.Invalid(wire.FieldError{Pointer: "/command/goto", Detail: err.Error()})
			}
			c.Goto = g
		}
		kw.Command = c
	}
	if b.Config != nil {
		cfg, err := json.Marshal(b.Config)
		if err != nil {
			return runs.CreateRequest{}, wire.Invalid(wire.FieldError{Pointer: "/config", Detail: err.Error()})
		}
		kw.Config = cfg
	}
	kw.InterruptBefore = nodes(b.InterruptBefore)
	kw.InterruptAfter = nodes(b.InterruptAfter)
	for _, m := range b.StreamMode {
		if !slices.Contains(dropModes, m) {
			kw.StreamMode = append(kw.StreamMode, string(m))
		}
	}
	if len(b.StreamMode) > 0 && len(kw.StreamMode) == 0 {
		return runs.CreateRequest{}, wire.Invalid(wire.FieldError{Pointer: "/stream_mode",
			Detail: "names only modes Trellis produces no events for (events, tools, lifecycle); add values, updates, messages-tuple, custom, tasks, checkpoints or debug"})
	}
	strategy := string(b.MultitaskStrategy)
	if strategy == "" {
		strategy = runs.Enqueue
	}
	return runs.CreateRequest{
		Tenant: tenant, ThreadID: thread, AssistantID: b.AssistantID, AssistantVersion: b.AssistantVersion, Kwargs: kw,
		Metadata: db.Metadata(b.Metadata), MultitaskStrategy: strategy,
		CreateThread: stateless || b.IfNotExists == wire.IfNotExistsCreate,
		After:        time.Duration(b.AfterSeconds * float64(time.Second)),
	}, nil
}

// nodes is an interrupt_before/after selector as node names.
func nodes(s *wire.NodeSelector) []string {
	switch {
	case s == nil:
		return nil
	case s.All:
		return []string{graph.AllNodes}
	}
	return s.Nodes
}

// create decodes a run-create body and creates the run on thread ("" for
// a stateless run on a new temporary thread).
func (a *API) create(w http.ResponseWriter, r *http.Request, stateless, background bool) (db.Run, wire.RunCreate, bool) {
	thread := checkpoint.NewID()
	if !stateless {
		t, p := wire.PathID(r, "thread_id")
		if p != nil {
			p.Write(w, r)
			return db.Run{}, wire.RunCreate{}, false
		}
		thread = t
	}
	b, p := wire.Decode[wire.RunCreate](r, a.BodyLimit)
	if p != nil {
		p.Write(w, r)
		return db.Run{}, b, false
	}
	run, ok := a.createFrom(w, r, thread, &b, stateless, background)
	return run, b, ok
}

// createFrom creates the run b asks for on thread.
func (a *API) createFrom(w http.ResponseWriter, r *http.Request, thread string, b *wire.RunCreate, stateless, background bool) (db.Run, bool) {
	req, p := a.createRequest(a.tenant(r), thread, b, stateless, background)
	if p == nil {
		p = a.checkWebhook(r.Context(), "/webhook", b.Webhook)
	}
	if p != nil {
		p.Write(w, r)
		return db.Run{}, false
	}
	run, err := a.Runs.Create(r.Context(), a.Enqueue, req)
	if err != nil && run.ID == "" {
		if stateless { // Create made the temporary thread before it refused the run
			// (or, when it stores the thread with the run, made none)
			if derr := a.Runs.DeleteThread(context.WithoutCancel(r.Context()), req.Tenant, thread); derr != nil && !errors.Is(derr, db.ErrNotFound) {
				slog.Warn("temporary thread of a refused run not deleted", "thread", thread, "err", derr)
			}
		}
		fail(w, r, err)
		return db.Run{}, false
	}
	if err != nil { // stored but not queued: it runs when the thread is next advanced
		slog.Warn("run stored but not queued", "run", run.ID, "err", err)
	}
	return run, true
}

func (a *API) createRun(w http.ResponseWriter, r *http.Request) { a.createBackground(w, r, false) }

func (a *API) createStatelessRun(w http.ResponseWriter, r *http.Request) {
	a.createBackground(w, r, true)
}

func (a *API) createBackground(w http.ResponseWriter, r *http.Request, stateless bool) {
	run, _, ok := a.create(w, r, stateless, true)
	if !ok {
		return
	}
	setRunHeaders(w.Header(), run)
	wire.WriteJSON(w, r, http.StatusOK, toWireRun(run, nil))
}

// createRunBatch creates stateless background runs, all or none checked
// first: every item is validated by the decoder; a run the service
// refuses stops the batch with that problem (the runs before it exist).
func (a *API) createRunBatch(w http.ResponseWriter, r *http.Request) {
	b, p := wire.Decode[wire.RunBatch](r, a.BodyLimit)
	if p != nil {
		p.Write(w, r)
		return
	}
	out := make([]any, 0, len(b))
	for i := range b {
		req, p := a.createRequest(a.tenant(r), checkpoint.NewID(), &b[i].RunCreate, true, true)
		if p == nil {
			p = a.checkWebhook(r.Context(), fmt.Sprintf("/%d/webhook", i), b[i].Webhook)
		}
		if p != nil {
			p.Write(w, r)
			return
		}
		run, err := a.Runs.Create(r.Context(), a.Enqueue, req)
		if err != nil && run.ID == "" {
			if derr := a.Runs.DeleteThread(context.WithoutCancel(r.Context()), req.Tenant, req.ThreadID); derr != nil && !errors.Is(derr, db.ErrNotFound) {
				slog.Warn("temporary thread of a refused run not deleted", "thread", req.ThreadID, "err", derr)
			}
			p := runProblem(r, err)
			p.Detail = fmt.Sprintf("run %d of the batch: %s (the %d before it were created)", i, p.Detail, i)
			p.Write(w, r)
			return
		}
		out = append(out, toWireRun(run, nil))
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// toWireRun shows a run; sel, when not empty, keeps only those fields.
func toWireRun(r db.Run, sel []wire.RunSelectField) any {
	md := wire.Metadata(r.Metadata)
	if md == nil {
		md = wire.Metadata{}
	}
	out := wire.Run{
		RunID: r.ID, ThreadID: r.ThreadID, AssistantID: r.AssistantID, CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: r.UpdatedAt.UTC(), Status: wire.RunStatus(r.Status), Metadata: md, AssistantVersion: r.AssistantVersion,
	}
	if r.MultitaskStrategy != "" {
		ms := wire.MultitaskStrategy(r.MultitaskStrategy)
		out.MultitaskStrategy = &ms
	}
	if len(r.Usage) > 0 {
		var u runs.RunUsage
		if json.Unmarshal(r.Usage, &u) == nil {
			out.Usage = &wire.RunUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, ModelCalls: u.Requests, DurationMS: u.DurationMS}
		}
	}
	if len(sel) == 0 {
		return out
	}
	if slices.Contains(sel, "kwargs") {
		out.Kwargs = r.Kwargs
	}
	b, _ := json.Marshal(out)
	var all map[string]json.RawMessage
	_ = json.Unmarshal(b, &all)
	kept := make(map[string]json.RawMessage, len(sel))
	for _, f := range sel {
		if v, ok := all[string(f)]; ok {
			kept[string(f)] = v
		} else {
			kept[string(f)] = json.RawMessage("null")
		}
	}
	return kept
}

// pathRun reads thread_id and run_id from the path and loads the run.
func (a *API) pathRun(w http.ResponseWriter, r *http.Request) (db.Run, bool) {
	thread, p := wire.PathID(r, "thread_id")
	if p != nil {
		p.Write(w, r)
		return db.Run{}, false
	}
	id, p := wire.PathID(r, "run_id")
	if p != nil {
		p.Write(w, r)
		return db.Run{}, false
	}
	run, err := a.DB.GetRun(r.Context(), a.tenant(r), thread, id)
	if err != nil {
		fail(w, r, err)
		return db.Run{}, false
	}
	return run, true
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request) {
	thread, p := wire.PathID(r, "thread_id")
	if p != nil {
		p.Write(w, r)
		return
	}
	q, p := wire.DecodeQuery[wire.RunListQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	tenant := a.tenant(r)
	if _, err := a.DB.GetThread(r.Context(), tenant, thread); err != nil {
		fail(w, r, err)
		return
	}
	list, err := a.DB.ListRuns(r.Context(), tenant, thread, db.RunQuery{Status: db.RunStatus(q.Status), Limit: wire.LimitOr(q.Limit, wire.DefaultLimit), Offset: q.Offset})
	if err != nil {
		fail(w, r, err)
		return
	}
	out := make([]any, len(list))
	for i, run := range list {
		out[i] = toWireRun(run, q.Select)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) getRun(w http.ResponseWriter, r *http.Request) {
	if run, ok := a.pathRun(w, r); ok {
		wire.WriteJSON(w, r, http.StatusOK, toWireRun(run, nil))
	}
}

func (a *API) deleteRun(w http.ResponseWriter, r *http.Request) {
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	if !run.Status.Terminal() {
		wire.Conflict(fmt.Sprintf("run %s is %s; cancel it first (POST .../cancel), then delete it", run.ID, run.Status)).Write(w, r)
		return
	}
	if err := a.DB.DeleteRun(r.Context(), a.tenant(r), run.ThreadID, run.ID); err != nil {
		fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

// stopRun cancels a live run with action "interrupt" or "rollback"
// (runs.Service.Stop). A run that already ended is db.ErrConflict.
func (a *API) stopRun(ctx context.Context, tenant string, run db.Run, action string) error {
	return a.Runs.Stop(ctx, tenant, run, action)
}

// awaitEnd waits until the run is terminal or gone, or ctx ends.
func (a *API) awaitEnd(ctx context.Context, tenant string, run db.Run) error {
	_, err := a.follow(ctx, tenant, run.ThreadID, run.ID, 1<<62, func(db.Event) error { return nil })
	return err
}

func (a *API) cancelRun(w http.ResponseWriter, r *http.Request) {
	q, p := wire.DecodeQuery[wire.RunCancelQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	action := string(q.Action)
	if action == "" {
		action = runs.Interrupt
	}
	tenant := a.tenant(r)
	if err := a.stopRun(r.Context(), tenant, run, action); err != nil {
		fail(w, r, err)
		return
	}
	if q.Wait {
		if err := a.awaitEnd(r.Context(), tenant, run); err != nil {
			fail(w, r, err)
			return
		}
	}
	wire.WriteJSON(w, r, http.StatusAccepted, nil)
}

// cancelRuns cancels runs by ID (on one thread) or every live run of the
// tenant with a status. Runs that already ended are skipped.
func (a *API) cancelRuns(w http.ResponseWriter, r *http.Request) {
	b, p := wire.Decode[wire.RunCancelMany](r, a.BodyLimit)
	if p != nil {
		p.Write(w, r)
		return
	}
	q, p := wire.DecodeQuery[wire.RunCancelManyQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	action := string(q.Action)
	if action == "" {
		action = runs.Interrupt
	}
	tenant, ctx := a.tenant(r), r.Context()
	var targets []db.Run
	if len(b.RunIDs) > 0 {
		for _, id := range b.RunIDs {
			run, err := a.DB.GetRun(ctx, tenant, b.ThreadID, id)
			if err != nil {
				fail(w, r, err)
				return
			}
			targets = append(targets, run)
		}
	} else {
		var err error
		if targets, err = a.liveRuns(ctx, tenant, b.ThreadID, b.Status); err != nil {
			fail(w, r, err)
			return
		}
	}
	for _, run := range targets {
		if run.Status.Terminal() {
			continue
		}
		// A run that ended or was removed (rolled back, its thread
		// deleted) since it was listed is no longer live: skipped.
		if err := a.stopRun(ctx, tenant, run, action); err != nil && !errors.Is(err, db.ErrConflict) && !errors.Is(err, db.ErrNotFound) {
			fail(w, r, err)
			return
		}
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

// liveRuns lists the runs with status ("all": pending and running) on
// thread, or on every thread of the tenant when thread is "".
func (a *API) liveRuns(ctx context.Context, tenant, thread string, status wire.CancelStatus) ([]db.Run, error) {
	statuses := []db.RunStatus{db.RunPending, db.RunRunning}
	if status != "all" {
		statuses = []db.RunStatus{db.RunStatus(status)}
	}
	threads := []string{thread}
	if thread == "" {
		threads = nil
		for off := 0; ; off += wire.MaxLimit {
			page, err := a.DB.SearchThreads(ctx, tenant, db.ThreadQuery{Query: db.Query{Limit: wire.MaxLimit, Offset: off}})
			if err != nil {
				return nil, err
			}
			for _, t := range page {
				threads = append(threads, t.ID)
			}
			if len(page) < wire.MaxLimit {
				break
			}
		}
	}
	var out []db.Run
	for _, t := range threads {
		for _, st := range statuses {
			rs, err := a.DB.ListRuns(ctx, tenant, t, db.RunQuery{Status: st, Limit: wire.MaxLimit})
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
	}
	return out, nil
}
