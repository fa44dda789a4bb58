package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// threadHandlers returns the handlers of the thread routes except the
// thread stream (joinThreadStream, with the run routes).
func (a *API) threadHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createThread":               http.HandlerFunc(a.createThread),
		"searchThreads":              http.HandlerFunc(a.searchThreads),
		"countThreads":               http.HandlerFunc(a.countThreads),
		"pruneThreads":               http.HandlerFunc(a.pruneThreads),
		"getThread":                  http.HandlerFunc(a.getThread),
		"patchThread":                http.HandlerFunc(a.patchThread),
		"deleteThread":               http.HandlerFunc(a.deleteThread),
		"copyThread":                 http.HandlerFunc(a.copyThread),
		"getThreadState":             http.HandlerFunc(a.getThreadState),
		"updateThreadState":          http.HandlerFunc(a.updateThreadState),
		"patchThreadState":           http.HandlerFunc(a.patchThreadState),
		"getThreadStateAt":           http.HandlerFunc(a.getThreadStateAt),
		"getThreadStateAtCheckpoint": http.HandlerFunc(a.getThreadStateAtCheckpoint),
		"getThreadHistory":           http.HandlerFunc(a.getThreadHistory),
		"getThreadTranscript":        http.HandlerFunc(a.getThreadTranscript),
	}
}

// toWireThread shows a thread row in LangGraph's shape.
func toWireThread(t db.Thread) wire.Thread {
	out := wire.Thread{ThreadID: t.ID, CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(), StateUpdatedAt: t.UpdatedAt.UTC(),
		Metadata: wire.Metadata(t.Metadata), Status: wire.ThreadStatus(t.Status), Interrupts: map[string][]wire.Interrupt{}}
	if out.Metadata == nil {
		out.Metadata = wire.Metadata{}
	}
	if len(t.Values) > 0 && string(t.Values) != "null" {
		out.Values = t.Values
	}
	if len(t.Interrupts) > 0 {
		var byTask map[string][]storedInterrupt
		if json.Unmarshal(t.Interrupts, &byTask) == nil {
			for k, ins := range byTask {
				for _, in := range ins {
					out.Interrupts[k] = append(out.Interrupts[k], in.wire())
				}
			}
		}
	}
	if t.Status == db.ThreadError && t.Error != "" {
		out.Error = t.Error
	}
	return out
}

// storedInterrupt is an interrupt as the run service records it on the
// thread row (LangGraph's "__interrupt__" entries).
type storedInterrupt struct {
	ID     string          `json:"id"`
	Value  json.RawMessage `json:"value"`
	NS     []string        `json:"ns"`
	Schema json.RawMessage `json:"schema"`
}

func (s storedInterrupt) wire() wire.Interrupt {
	var v any
	if len(s.Value) > 0 {
		v = s.Value
	}
	return wire.Interrupt{ID: s.ID, Value: v, ResponseSchema: s.Schema, Namespace: s.NS}
}

func (a *API) createThread(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.ThreadCreate](a, w, r)
	if !ok {
		return
	}
	tenant := a.tenant(r)
	t := db.Thread{ID: b.ThreadID, Metadata: db.Metadata(b.Metadata), Status: db.ThreadIdle, TTL: a.ThreadTTL}
	if b.TTL != nil {
		t.TTL = dbTTL(*b.TTL)
	}
	if t.ID == "" {
		t.ID = checkpoint.NewID()
	}
	ifExists := db.IfExistsRaise
	if b.IfExists == "do_nothing" {
		ifExists = db.IfExistsDoNothing
	}
	if len(b.Supersteps) > 0 {
		// An existing thread keeps its state: supersteps apply to new
		// threads only.
		if existing, err := a.DB.GetThread(r.Context(), tenant, t.ID); err == nil {
			if ifExists == db.IfExistsRaise {
				wire.Conflict(fmt.Sprintf("thread %q exists already; choose another thread_id, or send if_exists \"do_nothing\"", t.ID)).Write(w, r)
				return
			}
			wire.WriteJSON(w, r, http.StatusOK, toWireThread(existing))
			return
		} else if !isNotFound(err) {
			a.fail(w, r, err)
			return
		}
		if _, ok := a.graphForMetadata(r.Context(), tenant, t.Metadata); !ok {
			wire.Invalid(wire.FieldError{Pointer: "/metadata/graph_id", Detail: "supersteps need the thread's graph: set metadata.graph_id (or metadata.assistant_id) to one with an assistant"}).Write(w, r)
			return
		}
	}
	out, err := a.DB.CreateThread(r.Context(), tenant, t, ifExists)
	if err != nil {
		if errors.Is(err, db.ErrConflict) {
			wire.Conflict(fmt.Sprintf("thread %q exists already; choose another thread_id, or send if_exists \"do_nothing\"", t.ID)).Write(w, r)
			return
		}
		a.fail(w, r, err)
		return
	}
	if len(b.Supersteps) > 0 {
		if out, err = a.applySupersteps(r.Context(), tenant, out, b.Supersteps); err != nil {
			_ = a.removeThread(context.WithoutCancel(r.Context()), tenant, out.ID)
			a.fail(w, r, err)
			return
		}
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireThread(out))
}

// threadQuery builds the store's query from a search's filters.
func threadQuery(md wire.Metadata, values map[string]any, status wire.ThreadStatus) (db.ThreadQuery, error) {
	q := db.ThreadQuery{Status: db.ThreadStatus(status), Query: db.Query{Metadata: db.Metadata(md)}}
	if len(values) > 0 {
		v, err := json.Marshal(values)
		if err != nil {
			return q, err
		}
		q.Values = v
	}
	return q, nil
}

func (a *API) searchThreads(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.ThreadSearch](a, w, r)
	if !ok {
		return
	}
	q, err := threadQuery(b.Metadata, b.Values, b.Status)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	q.IDs, q.Title = b.IDs, b.Title
	q.Limit, q.Offset = wire.LimitOr(b.Limit, wire.DefaultLimit), b.Offset
	q.SortBy, q.SortOrder = string(b.SortBy), string(b.SortOrder)
	if q.SortBy == "" {
		q.SortBy = "updated_at"
	}
	if q.SortBy == "state_updated_at" {
		q.SortBy = "updated_at" // the row's update time is the state's
	}
	ts, err := a.DB.SearchThreads(r.Context(), a.tenant(r), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	sel := make([]string, len(b.Select))
	for i, s := range b.Select {
		sel[i] = string(s)
	}
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = selectFields(toWireThread(t), sel)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) countThreads(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.ThreadCount](a, w, r)
	if !ok {
		return
	}
	q, err := threadQuery(b.Metadata, b.Values, b.Status)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	q.Title = b.Title
	n, err := a.DB.CountThreads(r.Context(), a.tenant(r), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, n)
}

func (a *API) pruneThreads(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.ThreadPrune](a, w, r)
	if !ok {
		return
	}
	tenant := a.tenant(r)
	n := 0
	for _, id := range b.ThreadIDs {
		if b.Strategy == "keep_latest" {
			if _, err := a.DB.GetThread(r.Context(), tenant, id); isNotFound(err) {
				continue
			} else if err != nil {
				a.fail(w, r, err)
				return
			}
			if _, err := a.Saver.Prune(r.Context(), checkpoint.PruneOptions{ThreadID: runs.ThreadKey(tenant, id), KeepLatest: 1}); err != nil {
				a.fail(w, r, err)
				return
			}
			n++
			continue
		}
		err := a.removeThread(r.Context(), tenant, id)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		n++
	}
	wire.WriteJSON(w, r, http.StatusOK, wire.ThreadPruneResult{PrunedCount: n})
}

// loadThread reads the thread of the path, answering 404 itself.
func (a *API) loadThread(w http.ResponseWriter, r *http.Request) (db.Thread, bool) {
	id, ok := pathID(w, r, "thread_id")
	if !ok {
		return db.Thread{}, false
	}
	t, err := a.DB.GetThread(r.Context(), a.tenant(r), id)
	if err != nil {
		a.notFoundOr(w, r, err, "thread", id)
		return db.Thread{}, false
	}
	return t, true
}

func (a *API) getThread(w http.ResponseWriter, r *http.Request) {
	if _, ok := decodeQuery[wire.ThreadGetQuery](w, r); !ok {
		return
	}
	if t, ok := a.loadThread(w, r); ok {
		wire.WriteJSON(w, r, http.StatusOK, toWireThread(t))
	}
}

func (a *API) patchThread(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "thread_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.ThreadPatch](a, w, r)
	if !ok {
		return
	}
	t, err := a.DB.UpdateThreadMetadata(r.Context(), a.tenant(r), id, db.Metadata(b.Metadata))
	if err == nil && b.TTL != nil {
		t, err = a.DB.SetThreadTTL(r.Context(), a.tenant(r), id, dbTTL(*b.TTL))
	}
	if err != nil {
		a.notFoundOr(w, r, err, "thread", id)
		return
	}
	if strings.Contains(r.Header.Get("Prefer"), "return=minimal") {
		wire.WriteJSON(w, r, http.StatusNoContent, nil)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireThread(t))
}

func (a *API) deleteThread(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "thread_id")
	if !ok {
		return
	}
	if err := a.removeThread(r.Context(), a.tenant(r), id); err != nil {
		a.notFoundOr(w, r, err, "thread", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

// removeThread cancels the thread's live runs, then deletes its
// checkpoints and its row (with runs and events). A missing thread is an
// error wrapping db.ErrNotFound.
func (a *API) removeThread(ctx context.Context, tenant, id string) error {
	t, err := a.DB.GetThread(ctx, tenant, id)
	if err != nil {
		return err
	}
	for _, st := range []db.RunStatus{db.RunRunning, db.RunPending} {
		rs, err := a.DB.ListRuns(ctx, tenant, id, db.RunQuery{Status: st, Limit: 1000})
		if err != nil {
			return err
		}
		for _, run := range rs {
			if _, err := a.DB.RequestCancel(ctx, tenant, id, run.ID, runs.Interrupt); err != nil && !errors.Is(err, db.ErrConflict) && !isNotFound(err) {
				return err
			}
			if a.Runs != nil {
				a.Runs.Cancel(run.ID, runs.Interrupt)
			}
		}
	}
	if a.ThreadDeleted != nil {
		if err := a.ThreadDeleted(ctx, tenant, t); err != nil {
			return fmt.Errorf("delete the app data of thread %s: %w (the thread is kept; try again)", id, err)
		}
	}
	if err := a.Saver.DeleteThread(ctx, runs.ThreadKey(tenant, id)); err != nil {
		return fmt.Errorf("delete the checkpoints of thread %s: %w", id, err)
	}
	return a.DB.DeleteThread(ctx, tenant, id)
}

func (a *API) copyThread(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "thread_id")
	if !ok {
		return
	}
	tenant := a.tenant(r)
	to := checkpoint.NewID()
	t, err := a.DB.CopyThread(r.Context(), tenant, id, to)
	if err != nil {
		a.notFoundOr(w, r, err, "thread", id)
		return
	}
	if err := a.Saver.CopyThread(r.Context(), runs.ThreadKey(tenant, id), runs.ThreadKey(tenant, to)); err != nil && !isNotFound(err) {
		_ = a.DB.DeleteThread(context.WithoutCancel(r.Context()), tenant, to)
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireThread(t))
}

// dbTTL converts a request's TTL (minutes) to the store's.
func dbTTL(t wire.TTL) *db.TTL {
	strategy := string(t.Strategy)
	if strategy == "" {
		strategy = db.TTLDelete
	}
	return &db.TTL{Duration: time.Duration(t.Minutes * float64(time.Minute)), Strategy: strategy}
}
