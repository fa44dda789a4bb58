package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// assistantHandlers returns the handlers of the assistant routes.
func (a *API) assistantHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createAssistant":           http.HandlerFunc(a.createAssistant),
		"searchAssistants":          http.HandlerFunc(a.searchAssistants),
		"countAssistants":           http.HandlerFunc(a.countAssistants),
		"getAssistant":              http.HandlerFunc(a.getAssistant),
		"patchAssistant":            http.HandlerFunc(a.patchAssistant),
		"deleteAssistant":           http.HandlerFunc(a.deleteAssistant),
		"listAssistantVersions":     http.HandlerFunc(a.listAssistantVersions),
		"setLatestAssistantVersion": http.HandlerFunc(a.setLatestAssistantVersion),
		"getAssistantGraph":         http.HandlerFunc(a.getAssistantGraph),
		"getAssistantSchemas":       http.HandlerFunc(a.getAssistantSchemas),
		"getAssistantSubgraphs":     http.HandlerFunc(a.getAssistantSubgraphs),
		"getAssistantSubgraphsAt":   http.HandlerFunc(a.getAssistantSubgraphs),
	}
}

// toWireAssistant shows a stored assistant in LangGraph's shape.
func toWireAssistant(s db.Assistant) wire.Assistant {
	v := toWireVersion(s)
	return wire.Assistant{AssistantID: v.AssistantID, GraphID: v.GraphID, Config: v.Config, Context: v.Context,
		CreatedAt: v.CreatedAt, UpdatedAt: s.UpdatedAt.UTC(), Metadata: v.Metadata, Version: v.Version, Name: v.Name, Description: v.Description}
}

func toWireVersion(s db.Assistant) wire.AssistantVersion {
	out := wire.AssistantVersion{AssistantID: s.ID, GraphID: s.GraphID, CreatedAt: s.CreatedAt.UTC(),
		Metadata: wire.Metadata(s.Metadata), Version: s.Version, Name: s.Name}
	if len(s.Config) > 0 {
		_ = json.Unmarshal(s.Config, &out.Config) // stored by this API: always an object
	}
	out.Context = map[string]any{}
	if len(s.Context) > 0 && string(s.Context) != "null" {
		var c any
		if json.Unmarshal(s.Context, &c) == nil {
			out.Context = c
		}
	}
	if out.Metadata == nil {
		out.Metadata = wire.Metadata{}
	}
	if s.Description != "" {
		d := s.Description
		out.Description = &d
	}
	return out
}

// checkGraph answers a 422 at pointer when graphID is not registered.
func (a *API) checkGraph(w http.ResponseWriter, r *http.Request, pointer, graphID string) bool {
	if _, ok := a.Graphs.Spec(graphID); ok {
		return true
	}
	wire.Invalid(wire.FieldError{Pointer: pointer, Detail: fmt.Sprintf("no graph %q is registered; the graphs are: %s", graphID, strings.Join(a.Graphs.IDs(), ", "))}).Write(w, r)
	return false
}

// checkConfig answers a 422 naming each refused field when
// CheckAssistantConfig refuses the config.
func (a *API) checkConfig(w http.ResponseWriter, r *http.Request, c *wire.Config) bool {
	if a.CheckAssistantConfig == nil {
		return true
	}
	var m map[string]any
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &m)
	err := a.CheckAssistantConfig(r.Context(), m)
	if err == nil {
		return true
	}
	var fes []wire.FieldError
	var walk func(error)
	walk = func(err error) {
		if p, ok := err.(interface{ FieldPointer() string }); ok {
			fes = append(fes, wire.FieldError{Pointer: p.FieldPointer(), Detail: errors.Unwrap(err).Error()})
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		fes = append(fes, wire.FieldError{Pointer: "/config", Detail: err.Error()})
	}
	walk(err)
	wire.Invalid(fes...).Write(w, r)
	return false
}

func rawObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

func (a *API) createAssistant(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.AssistantCreate](a, w, r)
	if !ok || !a.checkGraph(w, r, "/graph_id", b.GraphID) {
		return
	}
	as := db.Assistant{ID: b.AssistantID, GraphID: b.GraphID, Name: b.Name, Description: b.Description,
		Context: rawObject(b.Context), Metadata: db.Metadata(b.Metadata)}
	if as.ID == "" {
		as.ID = checkpoint.NewID()
	}
	if as.Name == "" {
		as.Name = b.GraphID
	}
	if b.Config != nil {
		if !a.checkConfig(w, r, b.Config) {
			return
		}
		as.Config, _ = json.Marshal(b.Config)
	}
	ifExists := db.IfExistsRaise
	if b.IfExists == "do_nothing" {
		ifExists = db.IfExistsDoNothing
	}
	out, err := a.DB.CreateAssistant(r.Context(), a.tenant(r), as, ifExists)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireAssistant(out))
}

func (a *API) searchAssistants(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.AssistantSearch](a, w, r)
	if !ok {
		return
	}
	limit := wire.LimitOr(b.Limit, wire.DefaultLimit)
	q := db.AssistantQuery{GraphID: b.GraphID, Name: b.Name, Query: db.Query{Metadata: db.Metadata(b.Metadata),
		Limit: limit + 1, Offset: b.Offset, SortBy: string(b.SortBy), SortOrder: string(b.SortOrder)}}
	found, err := a.DB.SearchAssistants(r.Context(), a.tenant(r), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if len(found) > limit {
		found = found[:limit]
		w.Header().Set("X-Pagination-Next", strconv.Itoa(b.Offset+limit))
	}
	out := make([]any, len(found))
	sel := make([]string, len(b.Select))
	for i, s := range b.Select {
		sel[i] = string(s)
	}
	for i, f := range found {
		out[i] = selectFields(toWireAssistant(f), sel)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// selectFields limits v (encoded as a JSON object) to the fields named;
// no names keep v whole.
func selectFields(v any, fields []string) any {
	if len(fields) == 0 {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(b, &all) != nil {
		return v
	}
	out := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		if x, ok := all[f]; ok {
			out[f] = x
		} else {
			out[f] = json.RawMessage("null")
		}
	}
	return out
}

func (a *API) countAssistants(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.AssistantCount](a, w, r)
	if !ok {
		return
	}
	n, err := a.DB.CountAssistants(r.Context(), a.tenant(r), db.AssistantQuery{GraphID: b.GraphID, Name: b.Name, Query: db.Query{Metadata: db.Metadata(b.Metadata)}})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, n)
}

// loadAssistant reads the assistant of the path, answering 404 itself.
func (a *API) loadAssistant(w http.ResponseWriter, r *http.Request) (db.Assistant, bool) {
	id, ok := pathID(w, r, "assistant_id")
	if !ok {
		return db.Assistant{}, false
	}
	as, err := a.DB.GetAssistant(r.Context(), a.tenant(r), id)
	if err != nil {
		if isNotFound(err) {
			wire.NotFound("assistant", id).Write(w, r)
		} else {
			a.fail(w, r, err)
		}
		return db.Assistant{}, false
	}
	return as, true
}

func (a *API) getAssistant(w http.ResponseWriter, r *http.Request) {
	as, ok := a.loadAssistant(w, r)
	if ok {
		wire.WriteJSON(w, r, http.StatusOK, toWireAssistant(as))
	}
}

func (a *API) patchAssistant(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "assistant_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.AssistantPatch](a, w, r)
	if !ok {
		return
	}
	var p db.AssistantPatch
	if b.GraphID != "" {
		if !a.checkGraph(w, r, "/graph_id", b.GraphID) {
			return
		}
		p.GraphID = &b.GraphID
	}
	if b.Name != "" {
		p.Name = &b.Name
	}
	if b.Description != "" {
		p.Description = &b.Description
	}
	if b.Config != nil {
		if !a.checkConfig(w, r, b.Config) {
			return
		}
		p.Config, _ = json.Marshal(b.Config)
	}
	p.Context = rawObject(b.Context)
	p.Metadata = db.Metadata(b.Metadata)
	out, err := a.DB.UpdateAssistant(r.Context(), a.tenant(r), id, p)
	if err != nil {
		a.notFoundOr(w, r, err, "assistant", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireAssistant(out))
}

func (a *API) deleteAssistant(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "assistant_id")
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.AssistantDeleteQuery](w, r)
	if !ok {
		return
	}
	tenant := a.tenant(r)
	if q.DeleteThreads {
		if _, err := a.DB.GetAssistant(r.Context(), tenant, id); err != nil {
			a.notFoundOr(w, r, err, "assistant", id)
			return
		}
		for {
			ts, err := a.DB.SearchThreads(r.Context(), tenant, db.ThreadQuery{Query: db.Query{Metadata: db.Metadata{"assistant_id": id}, Limit: 100}})
			if err != nil {
				a.fail(w, r, err)
				return
			}
			for _, t := range ts {
				if err := a.removeThread(r.Context(), tenant, t.ID); err != nil && !isNotFound(err) {
					a.fail(w, r, err)
					return
				}
			}
			if len(ts) < 100 {
				break
			}
		}
	}
	if err := a.DB.DeleteAssistant(r.Context(), tenant, id); err != nil {
		a.notFoundOr(w, r, err, "assistant", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

func (a *API) listAssistantVersions(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "assistant_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.AssistantVersionsSearch](a, w, r)
	if !ok {
		return
	}
	vs, err := a.DB.AssistantVersions(r.Context(), a.tenant(r), id, db.Query{Metadata: db.Metadata(b.Metadata), Limit: wire.LimitOr(b.Limit, wire.DefaultLimit), Offset: b.Offset})
	if err != nil {
		a.notFoundOr(w, r, err, "assistant", id)
		return
	}
	if len(vs) == 0 && b.Offset == 0 && len(b.Metadata) == 0 {
		// An assistant always has a version: none means no assistant.
		wire.NotFound("assistant", id).Write(w, r)
		return
	}
	out := make([]wire.AssistantVersion, len(vs))
	for i, v := range vs {
		out[i] = toWireVersion(v)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) setLatestAssistantVersion(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "assistant_id")
	if !ok {
		return
	}
	b, ok := decodeBody[wire.AssistantSetLatest](a, w, r)
	if !ok {
		return
	}
	out, err := a.DB.SetLatestVersion(r.Context(), a.tenant(r), id, b.Version)
	if err != nil {
		if isNotFound(err) {
			wire.NewProblem(http.StatusNotFound, fmt.Sprintf("assistant %q has no version %d (for this tenant); list its versions with POST /assistants/%s/versions", id, b.Version, id)).Write(w, r)
			return
		}
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireAssistant(out))
}

// notFoundOr answers a not-found err as the 404 of kind id, and any other
// error as fail does.
func (a *API) notFoundOr(w http.ResponseWriter, r *http.Request, err error, kind, id string) {
	if isNotFound(err) {
		wire.NotFound(kind, id).Write(w, r)
		return
	}
	a.fail(w, r, err)
}
