package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/store"
)

// systemHandlers returns the handlers of the system routes: /ok, /info and
// /openapi.json.
func (a *API) systemHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"ok":      http.HandlerFunc(a.handleOk),
		"info":    http.HandlerFunc(a.handleInfo),
		"openapi": http.HandlerFunc(a.handleOpenAPI),
	}
}

// pingTimeout bounds the database check of GET /ok?check_db=1.
const pingTimeout = 5 * time.Second

func (a *API) handleOk(w http.ResponseWriter, r *http.Request) {
	q, p := wire.DecodeQuery[wire.OkQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	if q.CheckDB {
		if a.DB == nil {
			wire.NewProblem(http.StatusServiceUnavailable, "no database is configured").Write(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), pingTimeout)
		defer cancel()
		if err := a.DB.Ping(ctx); err != nil {
			slog.Warn("health check: the database does not answer", "err", err)
			wire.NewProblem(http.StatusServiceUnavailable, "the database does not answer: "+err.Error()).Write(w, r)
			return
		}
	}
	wire.WriteJSON(w, r, http.StatusOK, wire.Ok{Ok: true})
}

func (a *API) handleInfo(w http.ResponseWriter, r *http.Request) {
	v := a.Version
	if v == "" {
		v = "dev"
	}
	wire.WriteJSON(w, r, http.StatusOK, wire.Info{
		Version:        v,
		ScriptedModels: a.Scripted,
		Flags:          wire.InfoFlags{Assistants: true, Crons: true, StreamNamespaces: true, StrictResume: true},
	})
}

func (a *API) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	v := a.Version
	if v == "" {
		v = "dev"
	}
	doc, err := spec.OpenAPI(spec.Info{Title: "Trellis agent service", Version: v,
		Description: "The LangGraph-compatible API of Trellis."}, spec.Routes())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, json.RawMessage(doc))
}

// resErrors maps the errors of the layers below to statuses.
var resErrors = []wire.ErrorStatus{
	{Err: db.ErrNotFound, Status: http.StatusNotFound},
	{Err: checkpoint.ErrNotFound, Status: http.StatusNotFound},
	{Err: store.ErrNotFound, Status: http.StatusNotFound},
	{Err: runs.ErrUnknownGraph, Status: http.StatusNotFound},
	{Err: db.ErrConflict, Status: http.StatusConflict},
	{Err: db.ErrBusy, Status: http.StatusConflict},
	{Err: runs.ErrThreadBusy, Status: http.StatusConflict},
	{Err: checkpoint.ErrConflict, Status: http.StatusConflict},
	{Err: db.ErrInvalid, Status: http.StatusUnprocessableEntity},
	{Err: store.ErrTooLarge, Status: http.StatusRequestEntityTooLarge},
}

// fail answers err as a problem: *runs.InputError is a 422 naming its
// field, the sentinel errors of db, checkpoint and store their statuses,
// anything else a 500 (logged here, with no internals in the body).
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var in *runs.InputError
	if errors.As(err, &in) {
		wire.Invalid(wire.FieldError{Pointer: in.Pointer, Detail: in.Detail}).Write(w, r)
		return
	}
	p := wire.FromError(err, resErrors...)
	if p.Status >= 500 && p.Status != http.StatusGatewayTimeout {
		slog.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	p.Write(w, r)
}

// invalidAt is a 422 for a graph's refusal of a value at pointer (an
// unknown state key or node, a value of the wrong type): the engine's
// message says what and how to fix it.
func invalidAt(pointer string, err error) *wire.Problem {
	type pointed interface{ FieldPointer() string }
	var fp pointed
	if errors.As(err, &fp) {
		pointer += fp.FieldPointer()
	}
	return wire.Invalid(wire.FieldError{Pointer: pointer, Detail: trimGraphPrefix(err.Error())})
}

func trimGraphPrefix(s string) string {
	for _, p := range []string{"graph: ", "runs: "} {
		if len(s) > len(p) && s[:len(p)] == p {
			s = s[len(p):]
		}
	}
	return s
}

// pathID reads a path parameter as an ID, answering the 422 itself.
func pathID(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	id, p := wire.PathID(r, name)
	if p != nil {
		p.Write(w, r)
		return "", false
	}
	return id, true
}

// decodeBody decodes the request body, answering the problem itself.
func decodeBody[T any](a *API, w http.ResponseWriter, r *http.Request) (T, bool) {
	v, p := wire.Decode[T](r, a.BodyLimit)
	if p != nil {
		p.Write(w, r)
		return v, false
	}
	return v, true
}

// decodeQuery decodes the query, answering the problem itself.
func decodeQuery[T any](w http.ResponseWriter, r *http.Request) (T, bool) {
	v, p := wire.DecodeQuery[T](r)
	if p != nil {
		p.Write(w, r)
		return v, false
	}
	return v, true
}

// isNotFound reports whether err says a row or checkpoint does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, db.ErrNotFound) || errors.Is(err, checkpoint.ErrNotFound)
}
