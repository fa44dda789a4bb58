package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Request is what the person asks in the demo.
const Request = "Plan my study week: fit my pending tasks into free time this week."

// System describes the schedule's conventions to the model.
const System = `You manage a student's study schedule for one week.
Days are numbered 1 (Monday) to 5 (Friday), slots 1 to 8 within a day.
Events are classes; tasks are study work. A task placed entirely inside an
event that accepts embedding (a study hall) is embedded in it. Read before
you write: use get_overview, find_free and list_tasks. Every change
(place, move, swap, batch_move, unplace) is confirmed by the student.`

// Config configures the scheduler app. Model and Database are required;
// every other field has the default its comment names.
type Config struct {
	// Model plans, asks, runs the steps and delivers (required; Script()
	// for the scripted demo model).
	Model llm.Model
	// Database is where the schedules live (required): a SQLite file, or a
	// postgres:// URL. The tables are prefixed sched_ and migrate
	// themselves, so it may be the database the runner keeps its threads
	// in.
	Database string
	// Schema is the PostgreSQL schema for the tables (default: the URL's
	// search_path); ignored for SQLite.
	Schema string
	// Scope is the data scope of runs whose context has none
	// (apps.WithScope); default "" (such runs fail, saying so).
	Scope string
	// Fresh resets Scope's schedule to Seed's week when New runs.
	Fresh bool
	// Seed is the week a scope starts with on its first tool call
	// (default Sample).
	Seed func() *Schedule
	// System is the system prompt (default System).
	System string
	// Request is the sample request App.Input("") uses (default Request).
	Request string
}

// Name is the app's name.
const Name = "scheduler"

// Summary says in one line what the app does.
const Summary = "plan-and-execute over a study schedule in SQLite: a form question, plan review, approved writes, delivery"

// New builds the scheduler app: a plan-and-execute agent over the
// schedules in cfg.Database, one per scope.
func New(ctx context.Context, cfg Config) (*apps.App, error) {
	if cfg.Model == nil {
		return nil, errors.New("scheduler: Config.Model is nil; pass the llm.Model that plans (scheduler.Script() for the scripted demo)")
	}
	if cfg.Database == "" {
		return nil, errors.New("scheduler: Config.Database is empty; pass the SQLite file (or postgres:// URL) to keep the schedules in")
	}
	if cfg.Seed == nil {
		cfg.Seed = Sample
	}
	if cfg.System == "" {
		cfg.System = System
	}
	if cfg.Request == "" {
		cfg.Request = Request
	}
	store, err := OpenSource(ctx, cfg.Database, cfg.Schema)
	if err != nil {
		return nil, err
	}
	if cfg.Fresh && cfg.Scope != "" {
		if err := store.Reset(ctx, cfg.Scope, cfg.Seed()); err != nil {
			store.Close()
			return nil, err
		}
	}
	g, err := NewGraph(cfg.Model, store, cfg.Scope, cfg.Seed, cfg.System)
	if err != nil {
		store.Close()
		return nil, err
	}
	d := data{store: store, fallback: cfg.Scope, seed: cfg.Seed}
	return &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   g,
		Input: func(request string) graph.Update {
			if request == "" {
				request = cfg.Request
			}
			return planexec.Input(request)
		},
		Script: Script,
		Retry:  apps.RetryFailedSteps,
		Events: graph.EventCustom,
		Outcome: func(ctx context.Context, s graph.State) string {
			var b strings.Builder
			if sch, err := d.load(ctx); err == nil {
				b.WriteString("The week now:\n")
				for _, it := range sch.Sorted() {
					if it.Kind == KindTask {
						fmt.Fprintf(&b, "  #%d %s: %s\n", it.ID, it.Title, it.where(sch.Window))
					}
				}
			}
			return b.String()
		},
		Close: apps.Closer(store.Close),
	}, nil
}

// NewGraph builds the planning agent over the schedules in store; tools
// work on the run's scope (apps.Scope, else scope), seeded with seed.
func NewGraph(model llm.Model, store *Store, scope string, seed func() *Schedule, system string) (*graph.Graph, error) {
	if system == "" {
		system = System
	}
	return planexec.New(planexec.Config{
		Name:        Name,
		Model:       model,
		System:      system,
		Tools:       Tools(store, scope, seed),
		PlanMode:    true,
		AskMode:     true,
		ConfirmPlan: true,
		// A step that fails (a model timeout, a server error) stops the
		// run, so the thread can be resumed and the step retried
		// (App.Retry); delivering around it would hide the failure behind
		// a summary and leave the thread finished.
		ContinueOnError: false,
	})
}

// Entry describes the app to runners: the schedules live in the Env's
// database, scoped by the Env's scope (the thread), reset when Fresh.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script,
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			return New(ctx, Config{Model: env.Model, Database: env.Database, Scope: env.Scope, Fresh: env.Fresh})
		}}
}
