// Package api serves the LangGraph-compatible HTTP API: one handler per
// operation of the route table (server/api/spec), each decoding with
// server/api/wire, working through the run service (server/runs) and the
// store of record (server/db), and answering in LangGraph's shapes or with
// a problem+json.
package api

import (
	"context"
	"net/http"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/store"
)

// API holds what the handlers work with.
type API struct {
	DB     db.DB
	Runs   *runs.Service
	Graphs *runs.Registry
	Saver  checkpoint.Saver
	Store  store.Store // nil: the store routes answer 404 problems
	// Enqueue hands a thread to the run queue (server/queue's Enqueue).
	Enqueue runs.Enqueuer
	// EnqueueUnit hands an experiment's unit to the run queue; nil: the
	// server runs no experiments (POST /experiments answers 503).
	EnqueueUnit UnitEnqueuer
	// Tenant returns the tenant of a request (the default tenant until
	// authentication exists).
	Tenant func(r *http.Request) string
	// Info is what GET /info reports beyond the version (scripted models
	// and the like).
	Scripted bool
	Version  string
	// BodyLimit bounds request bodies (0: wire's default).
	BodyLimit int64
	// ThreadTTL is the TTL of threads created without one (nil: they
	// live until deleted).
	ThreadTTL *db.TTL
	// CheckWebhook refuses a run's webhook URL (a 422 naming /webhook);
	// nil accepts every http(s) URL.
	CheckWebhook func(ctx context.Context, url string) error
	// CheckAssistantConfig, when set, checks an assistant's config on
	// create and update (the models it names); an error that is or wraps
	// values with a Pointer method answers a 422 at that pointer.
	CheckAssistantConfig func(ctx context.Context, config map[string]any) error
	// ThreadDeleted, when set, deletes what the thread's app keeps for it
	// (apps.App.DeleteScope); DELETE /threads/{id} calls it before the
	// checkpoints and the row go, so a failure keeps the thread for
	// another try.
	ThreadDeleted func(ctx context.Context, tenant string, t db.Thread) error
}

// DefaultTenant is the tenant of every request until authentication
// exists.
const DefaultTenant = "default"

// tenant returns the request's tenant.
func (a *API) tenant(r *http.Request) string {
	if a.Tenant != nil {
		return a.Tenant(r)
	}
	return DefaultTenant
}

// Handlers returns one handler per operation ID of spec.Routes(); each
// group of routes adds its own (assistants.go, threads.go, runs.go,
// store.go, system.go).
func (a *API) Handlers() map[string]http.Handler {
	h := map[string]http.Handler{}
	for _, group := range []map[string]http.Handler{
		a.assistantHandlers(), a.threadHandlers(), a.runHandlers(), a.cronHandlers(), a.storeHandlers(), a.systemHandlers(),
		a.datasetHandlers(), a.feedbackHandlers(), a.experimentHandlers(),
	} {
		for id, handler := range group {
			h[id] = handler
		}
	}
	return h
}
