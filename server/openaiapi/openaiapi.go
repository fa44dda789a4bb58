// Package openaiapi serves Trellis assistants over OpenAI's chat wire:
// GET /v1/models lists the assistants as models and POST
// /v1/chat/completions runs the named one, streamed or not. It is a thin
// translator over the run service (server/runs): a request becomes a run
// on the conversation's thread, its events become chunks, and a run that
// stops for a person (a question, a plan to confirm, a write to approve)
// becomes a reply the person answers with their next message.
//
// Conversations are threads: a request names its thread (metadata
// thread_id or the X-Thread-Id header), or the thread is found by a
// fingerprint of the history sent. See docs/openai.md.
package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// Handler serves the wire's routes.
type Handler struct {
	DB    db.DB
	Runs  *runs.Service
	Saver checkpoint.Saver
	// Enqueue hands a thread to the run queue.
	Enqueue runs.Enqueuer
	// Tenant returns a request's tenant (DefaultTenant when nil).
	Tenant func(r *http.Request) string
	// BodyLimit bounds request bodies (0: wire.DefaultBodyLimit).
	BodyLimit int64
	// Log receives failures (slog.Default() when nil).
	Log *slog.Logger

	recent recentTurns // where this process recorded its latest turns
}

// DefaultTenant is the tenant of requests when Handler.Tenant is nil.
const DefaultTenant = "default"

// Headers of the wire's answers.
const (
	// HeaderThread names the conversation's thread, in requests and
	// answers.
	HeaderThread = "X-Thread-Id"
	// HeaderStatus is "done", "waiting" or "reasked" (Extension.Status).
	HeaderStatus = "X-Trellis-Status"
)

// Handlers returns the wire's handlers by operation ID (the route table,
// server/api/spec, lists the routes).
func (h *Handler) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"listModels":           http.HandlerFunc(h.listModels),
		"createChatCompletion": http.HandlerFunc(h.chat),
		"listThreadMessages":   http.HandlerFunc(h.history),
	}
}

func (h *Handler) tenant(r *http.Request) string {
	if h.Tenant != nil {
		return h.Tenant(r)
	}
	return DefaultTenant
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// apiError is an error answered in OpenAI's shape.
type apiError struct {
	status     int
	typ        string
	param      string
	code       string
	msg        string
	retryAfter int // seconds; sent as Retry-After when positive
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, msg: fmt.Sprintf(format, args...)}
}

// write answers e as OpenAI does: {"error": {message, type, param, code}}.
func (e *apiError) write(w http.ResponseWriter) {
	d := ErrorDetail{Message: e.msg, Type: e.typ}
	if e.param != "" {
		d.Param = &e.param
	}
	if e.code != "" {
		d.Code = &e.code
	}
	w.Header().Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Error: d})
}

// fromProblem turns the body decoder's problem into OpenAI's shape: 422s
// (a field of the wrong type, a required one missing) are 400s there.
func fromProblem(p *wire.Problem) *apiError {
	e := &apiError{status: p.Status, typ: "invalid_request_error", msg: p.Detail}
	if e.status == http.StatusUnprocessableEntity {
		e.status = http.StatusBadRequest
	}
	if len(p.Errors) > 0 {
		fe := p.Errors[0]
		e.param = fe.Pointer
		if len(e.param) > 0 && e.param[0] == '/' {
			e.param = e.param[1:]
		}
		e.msg = fmt.Sprintf("%s: %s", fe.Pointer, fe.Detail)
		if len(p.Errors) > 1 {
			e.msg += fmt.Sprintf(" (and %d more problems)", len(p.Errors)-1)
		}
	}
	if e.msg == "" {
		e.msg = http.StatusText(e.status)
	}
	return e
}

// internal logs err and answers it: a storage failure of the database
// as 507 (code storage_full) or 503 with Retry-After (code
// database_unavailable), anything else as a 500.
func (h *Handler) internal(r *http.Request, err error) *apiError {
	h.log().Error("openai wire request failed", "path", r.URL.Path, "err", err)
	if se, ok := db.AsStorage(err); ok {
		if errors.Is(se.Kind, db.ErrStorageFull) {
			return &apiError{status: http.StatusInsufficientStorage, typ: "server_error", code: "storage_full", msg: se.Advice()}
		}
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "database_unavailable", msg: se.Advice(), retryAfter: db.RetryAfterSeconds}
	}
	return &apiError{status: http.StatusInternalServerError, typ: "server_error", msg: "the server failed: " + err.Error()}
}

// listModels lists every graph (its first assistant) and every assistant
// as a model: a graph ID or an assistant ID is a model name.
func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenant := h.tenant(r)
	var all []db.Assistant
	for off := 0; ; off += wire.MaxLimit {
		page, err := h.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{Query: db.Query{Limit: wire.MaxLimit, Offset: off, SortBy: "created_at", SortOrder: "asc"}})
		if err != nil {
			h.internal(r, err).write(w)
			return
		}
		all = append(all, page...)
		if len(page) < wire.MaxLimit {
			break
		}
	}
	out := ModelList{Object: "list", Data: []Model{}}
	var graphs []string
	for _, a := range all {
		if !slices.Contains(graphs, a.GraphID) {
			graphs = append(graphs, a.GraphID)
			out.Data = append(out.Data, Model{ID: a.GraphID, Object: "model", Created: a.CreatedAt.Unix(), OwnedBy: "trellis", Name: a.Name, GraphID: a.GraphID})
		}
	}
	for _, a := range all {
		if !slices.Contains(graphs, a.ID) {
			out.Data = append(out.Data, Model{ID: a.ID, Object: "model", Created: a.CreatedAt.Unix(), OwnedBy: "trellis", Name: a.Name, GraphID: a.GraphID})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// assistant resolves a model name as every wire resolves an assistant
// (db.FindAssistant): an assistant ID, a graph ID, or an assistant's name.
func (h *Handler) assistant(ctx context.Context, tenant, model string) (db.Assistant, error) {
	a, err := db.FindAssistant(ctx, h.DB, tenant, model)
	if errors.Is(err, db.ErrNotFound) {
		return db.Assistant{}, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
			msg: fmt.Sprintf("the model %q does not exist: it names no assistant, graph or assistant name (GET /v1/models lists them)", model)}
	}
	return a, err
}
