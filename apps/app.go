// Package apps holds the application systems built on Trellis, one package
// each (apps/scheduler, apps/planner, apps/sqlrouter, apps/builder,
// apps/testplanner), all built the same way:
//
//	app, err := scheduler.New(ctx, scheduler.Config{Model: model, Database: "data/app.db"})
//	if err != nil { ... }
//	defer app.Close()
//	res, err := app.Graph.Invoke(apps.WithScope(ctx, thread), app.Input(""),
//		graph.WithCheckpointer(saver), graph.WithThread(thread))
//
// Each package has a Config (a model — or one per phase —, tools, prompts,
// a data source, options; every field documents its default) and
// New(ctx, Config) (*App, error). App is the compiled graph plus what a
// runner needs: the name and summary, an input builder, the options every
// run takes, an outcome renderer and Close. Nothing is global: two Apps
// built from two Configs share no state.
//
// Data an app keeps of its own (the scheduler's calendar) is scoped: every
// table has a scope column and every query names it. The scope is read from
// the run's context (WithScope; a runner passes the thread ID) or else from
// the Config's Scope. A run with neither fails with an error saying so.
//
// The scripted models (Script in each package) answer from rules over the
// request — which node asks, which step, whether a tool result came back —
// so any number of threads get the same sensible replies.
package apps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// App is one built application: its compiled graph and what a runner (the
// trellis command, a service) needs to run it.
type App struct {
	// Name is the app's short name ("scheduler").
	Name string
	// Summary says in one line what it does.
	Summary string
	// Graph is the compiled graph. Run it with a checkpointer and a thread,
	// and the scope in the context (WithScope) if the app keeps data.
	Graph *graph.Graph
	// Input builds the update that starts a thread on request; "" asks
	// the app's sample request (the demo's).
	Input func(request string) graph.Update
	// Options are added to every run (a step limit...); the runner adds
	// the checkpointer, the thread and the store.
	Options []graph.RunOption
	// Script returns a new scripted model that plays the app's demo
	// scenario (no real model is called).
	Script func() llm.Model
	// Events are the event kinds Print shows; Print renders one as a line
	// of progress for a person (nil: nothing beyond the questions).
	Events graph.EventKind
	Print  func(w io.Writer, ev graph.Event)
	// Outcome renders a finished thread's state for the person. ctx
	// carries the scope for apps that read their own data.
	Outcome func(ctx context.Context, s graph.State) string
	// Retry, when set, returns the update that lets a thread whose run
	// failed retry what failed (a runner applies it with
	// graph.UpdateState(ctx, update, "", ...), keeping the tasks that were
	// next); nil when there is nothing to clear.
	Retry func(s graph.State) graph.Update
	// DeleteScope, when set, deletes the data the app keeps for a scope
	// (the scheduler's calendar of a thread); nil when the app keeps no
	// data of its own. A runner calls it when the thread the scope
	// belongs to is deleted (trellis serve: DELETE /threads/{id} and the
	// thread TTL sweeper, with the scope it runs the thread under). A
	// scope without data is not an error.
	DeleteScope func(ctx context.Context, scope string) error
	// Close releases what New acquired (databases, servers). Always
	// non-nil; calling it twice is harmless.
	Close func() error
}

type scopeKey struct{}

// WithScope returns ctx with the data scope of a run: an app that keeps
// data of its own (the scheduler's calendar) reads and writes only the rows
// of this scope. Runners pass the thread ID, so two threads on one database
// see their own data.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// Scope returns the scope set with WithScope, or "".
func Scope(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// ScopeOr returns the scope of ctx, or fallback when ctx has none.
func ScopeOr(ctx context.Context, fallback string) string {
	if s := Scope(ctx); s != "" {
		return s
	}
	return fallback
}

// Env is what a runner supplies to build any app by name (see
// apps/catalog): the parts of every Config that the runner, not the app,
// decides.
type Env struct {
	// Model answers every request (the app's scripted one, or a real
	// provider's).
	Model llm.Model
	// Database is the SQLite file the runner keeps its threads in; apps
	// with data of their own keep their tables there too (prefixed, each
	// app migrating its own).
	Database string
	// DataDir is a directory for any other files an app needs (sample
	// databases).
	DataDir string
	// Scope is the default data scope (the thread ID).
	Scope string
	// Fresh says the thread starts over: an app with data of its own
	// resets the scope's data to its starting point.
	Fresh bool
	// Configurable is the assistant's config.configurable object (JSON;
	// nil: none), from which an app reads its own options (each under its
	// own key; see the app's Entry).
	Configurable json.RawMessage
	// Resolve turns a model name (trellis.yaml's models) or a model spec
	// into a model, for options that choose a model per phase (nil: only
	// Model is available).
	Resolve func(name string) (llm.Model, error)
	// Assistant, in a service, returns the compiled graph of another
	// assistant of the same tenant, by ID, so an app can offer it as a
	// sub-agent (apps/sqlrouter's Settings.Assistants). nil outside a
	// service. A cycle of assistants using each other is an error.
	Assistant func(ctx context.Context, id string) (*graph.Graph, error)
	// Settings are the app's own settings as JSON (trellis.yaml's
	// apps.<name> section): each app documents the object it reads with
	// Decode (its package's Settings type). nil: the defaults.
	Settings json.RawMessage
	// Middleware is the assistant's middleware chain (package
	// agent/middleware; trellis.yaml's assistants[].middleware, built by
	// the runner), in order. Every app gives it to the agents it builds
	// (its Config's Middleware), so they run their model and tool calls
	// through it.
	Middleware []middleware.Middleware
}

// Decode reads env.Settings into v (a pointer to the app's Settings),
// refusing unknown fields so a misspelt setting is an error naming it.
// Without settings v is left as it is.
func (env Env) Decode(v any) error {
	if len(env.Settings) == 0 || string(env.Settings) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(env.Settings))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}

// Closer joins close functions into one that runs each once, for New's
// error paths and App.Close.
func Closer(fns ...func() error) func() error {
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		var first error
		for i := len(fns) - 1; i >= 0; i-- {
			if fns[i] == nil {
				continue
			}
			if err := fns[i](); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// Entry names an app and builds it from an Env, so a runner can offer
// every app by name (apps/catalog lists them). Each app package's Entry
// function maps the Env onto its own Config and its documented defaults.
type Entry struct {
	// Name and Summary are the app's (the same as the built App's).
	Name, Summary string
	// Script returns a new scripted model for the demo.
	Script func() llm.Model
	// Open builds the app over env.
	Open func(ctx context.Context, env Env) (*App, error)
	// Check, when set, checks the app's settings (Env.Settings: trellis.yaml's
	// apps.<name> section) without building the app — unknown keys and
	// values of the wrong type — so a runner can refuse a bad section at
	// start rather than at the first run. What needs the app built (its
	// database, its templates rendered) is still reported by Open.
	Check func(settings json.RawMessage) error
	// Start is what a page offers on an empty thread of the app's
	// assistant: example requests, and for an app whose input is not a
	// chat the keys a run starts from.
	Start Start
}

// Start is an app's declaration of how a person begins a thread with it.
// trellis serve puts it in the metadata of the app's default assistant
// ("examples" and "input"), where the web page reads it.
type Start struct {
	// Examples are requests a person can send as they are, shown as
	// one-click prompts on an empty thread (a few, each one line).
	Examples []string
	// Input lists the state keys a run of an app that does not chat
	// starts from (its Input builder's), each with what to put there; a
	// page's input form shows these keys only. Empty for a chat app.
	Input []InputKey
}

// InputKey is one key of an app's input, for a person filling it in.
type InputKey struct {
	// Key is the state key's name.
	Key string `json:"key"`
	// Description says what the value is and what leaving it empty does.
	Description string `json:"description,omitempty"`
}

// Metadata returns the start declaration as assistant metadata:
// "examples" (a list of strings) and "input" (a list of {key,
// description}); a part left empty is left out.
func (s Start) Metadata() map[string]any {
	m := map[string]any{}
	if len(s.Examples) > 0 {
		m["examples"] = slices.Clone(s.Examples)
	}
	if len(s.Input) > 0 {
		in := make([]any, len(s.Input))
		for i, k := range s.Input {
			e := map[string]any{"key": k.Key}
			if k.Description != "" {
				e["description"] = k.Description
			}
			in[i] = e
		}
		m["input"] = in
	}
	return m
}

// CheckSettings is an Entry.Check for an app whose settings are a T,
// decoded the way Env.Decode decodes them.
func CheckSettings[T any](settings json.RawMessage) error {
	var v T
	return Env{Settings: settings}.Decode(&v)
}

// RetryFailedSteps is App.Retry for planexec agents: it forgets the
// results of the steps that failed, so the dispatcher runs them again.
func RetryFailedSteps(s graph.State) graph.Update {
	var failed []string
	for id, r := range planexec.Steps.Get(s) {
		if r.Status == planexec.StepFailed {
			failed = append(failed, id)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	slices.Sort(failed)
	return graph.Writes(graph.DeleteKeys(planexec.Steps, failed...))
}
