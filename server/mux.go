package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/api/spec"
	"github.com/trellis-agents/trellis/server/api/wire"
)

// newMux mounts the API's handlers on the route table and the problem
// fallback on "/". An operation the API has no handler for yet answers a
// 501 problem naming it (and is logged at start), so a partial build still
// serves every route the document lists; the system routes (/ok, /info,
// /openapi.json) have built-in versions used only in that case.
func newMux(a *api.API, log *slog.Logger) (*http.ServeMux, error) {
	routes := spec.Routes()
	handlers := a.Handlers()
	builtin := builtinSystem(a, routes)
	var missing []string
	for _, r := range routes {
		if handlers[r.OperationID] != nil {
			continue
		}
		if h := builtin[r.OperationID]; h != nil {
			handlers[r.OperationID] = h
			continue
		}
		missing = append(missing, r.OperationID)
		handlers[r.OperationID] = notImplemented(r)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		log.Warn("some API operations are not implemented in this build and answer 501", "operations", strings.Join(missing, ", "))
	}
	mux := http.NewServeMux()
	if err := spec.Register(mux, routes, handlers); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	mux.Handle("/", spec.Fallback(routes))
	return mux, nil
}

func notImplemented(r spec.Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		wire.NewProblem(http.StatusNotImplemented, fmt.Sprintf("%s %s (%s) is not implemented by this build of Trellis", r.Method, r.Pattern, r.OperationID)).Write(w, req)
	})
}

// builtinSystem are minimal /ok, /info and /openapi.json handlers for a
// build whose API lacks them.
func builtinSystem(a *api.API, routes []spec.Route) map[string]http.Handler {
	var once sync.Once
	var doc []byte
	var docErr error
	return map[string]http.Handler{
		"ok": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("check_db") == "1" {
				if err := a.DB.Ping(r.Context()); err != nil {
					wire.NewProblem(http.StatusServiceUnavailable, "the database does not answer").Write(w, r)
					return
				}
			}
			wire.WriteJSON(w, r, http.StatusOK, wire.Ok{Ok: true})
		}),
		"info": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wire.WriteJSON(w, r, http.StatusOK, wire.Info{Version: a.Version, Flags: wire.InfoFlags{Assistants: true, StrictResume: true}, ScriptedModels: a.Scripted})
		}),
		"openapi": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() {
				doc, docErr = spec.OpenAPI(spec.Info{Title: "Trellis", Version: a.Version, Description: "The Trellis agent service: LangGraph's threads/runs API."}, routes)
			})
			if docErr != nil {
				wire.NewProblem(http.StatusInternalServerError, "the OpenAPI document could not be generated").Write(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		}),
	}
}

// logRequests logs each request's method, path, status and duration at
// debug level, and 5xx answers as errors.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		level := slog.LevelDebug
		if rec.status >= 500 {
			level = slog.LevelError
		}
		log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path, "status", rec.code(), "duration", time.Since(start))
	})
}

// statusRecorder notes the status; Unwrap lets http.ResponseController
// (flushes and write deadlines of streams) reach the connection.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Flush flushes the connection (for handlers that assert http.Flusher).
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}
