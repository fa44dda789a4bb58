package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
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
	// Database is the SQLite file the schedules live in (required); the
	// tables are prefixed sched_, so it may be the file the runner keeps
	// its threads in.
	Database string
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
		return nil, errors.New("scheduler: Config.Database is empty; pass the SQLite file to keep the schedules in")
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
	store, err := Open(ctx, cfg.Database)
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

// The scripted scenario's plan: two read steps in parallel, two write
// steps in parallel, then a check.
var scriptedPlan = map[string]any{
	"complexity": "simple",
	"task":       "Place the pending study tasks into free time this week",
	"steps": []planexec.Step{
		{ID: "s1", Title: "Look at the week", Description: "Get the overview and the free runs of 2 slots."},
		{ID: "s2", Title: "Review the pending tasks", Description: "List the pending tasks with their durations."},
		{ID: "s3", Title: "Place the algebra quiz review", Description: "Place task #20 in a free 2-slot run early in the week.", DependsOn: []string{"s1", "s2"}},
		{ID: "s4", Title: "Place the assignment and the essay outline", Description: "Place task #21 (3 slots) and embed task #23 in a study hall.", DependsOn: []string{"s1", "s2"}},
		{ID: "s5", Title: "Check the result", Description: "Confirm that nothing conflicts and list what is still pending.", DependsOn: []string{"s3", "s4"}},
	},
}

// ScriptedForm is the form the scripted planner asks the person to fill.
var ScriptedForm = map[string]any{
	"mode":     "form",
	"question": "A few details so the plan fits you:",
	"fields": []map[string]any{
		{"key": "max_slots", "label": "Most study slots per day", "type": "number", "required": true, "min": 1, "max": 8},
		{"key": "first", "label": "Subject to schedule first", "type": "select", "required": true, "options": []string{"math", "cs", "physics", "history"}},
		{"key": "friday_free", "label": "Keep Friday free", "type": "boolean"},
	},
}

// Script returns the scripted model for the demo: a form question, a plan
// of five steps in three levels, reads, three writes (two in one reply)
// and a delivery. Each reply is chosen by what the request holds — which
// node or step asks, and whether it ends with a tool result — never by how
// many requests came before, so a thread resumed in a new process (with a
// new scripted model) gets the same replies as one run straight through.
func Script() llm.Model {
	m := llmtest.New()
	after := llmtest.LastIsToolResult()
	m.When(llmtest.Node(planexec.IntentNode), llmtest.JSON(map[string]string{"intent": "task"})).Repeat()
	m.When(llmtest.And(llmtest.Node(planexec.PlanNode), after), llmtest.JSON(scriptedPlan)).Repeat()
	m.When(llmtest.Node(planexec.PlanNode), llmtest.ToolCalls(llmtest.Call(planexec.AskToolName, mustJSON(ScriptedForm)))).Repeat()
	step := func(id, answer string, calls ...llm.ToolCall) {
		is := llmtest.LastUserContains("Your step is " + id + ":")
		m.When(llmtest.And(is, after), llmtest.Text(answer)).Repeat()
		m.When(is, llmtest.ToolCalls(calls...)).Repeat()
	}
	step("s1", "Tuesday has slots 1-2 free, Thursday 3-8 and Friday 5-8; the Wednesday study hall accepts embedded tasks.",
		llmtest.Call("get_overview", `{}`), llmtest.Call("find_free", `{"duration":2}`))
	step("s2", "Pending: #20 algebra quiz review (2 slots), #21 programming assignment (3), #22 physics problem set (2), #23 essay outline (1).",
		llmtest.Call("list_tasks", `{"status":"pending"}`))
	step("s3", "The algebra quiz review is on Tuesday, slots 1-2.",
		llmtest.Call("place", `{"id":20,"day":2,"start":1}`))
	step("s4", "The programming assignment is on Thursday, slots 3-5; the essay outline goes into Wednesday's study hall, slot 5, if approved.",
		llmtest.Call("place", `{"id":21,"day":4,"start":3}`), llmtest.Call("place", `{"id":23,"day":3,"start":5}`))
	step("s5", "No conflicts. Still pending: #22 physics problem set (2 slots).",
		llmtest.Call("list_tasks", `{"status":"pending"}`))
	m.When(llmtest.Node(planexec.DeliverNode), llmtest.Text(
		"Your week is planned: algebra quiz review on Tuesday slots 1-2, programming assignment on Thursday slots 3-5, "+
			"essay outline in Wednesday's study hall (slot 5) unless you turned it down. Friday stays free. The physics "+
			"problem set is still pending: ask me to place it when you know your Friday plans.")).Repeat()
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the scenario's own literals
	}
	return string(b)
}

// Entry describes the app to runners: the schedules live in the Env's
// database, scoped by the Env's scope (the thread), reset when Fresh.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script,
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			return New(ctx, Config{Model: env.Model, Database: env.Database, Scope: env.Scope, Fresh: env.Fresh})
		}}
}
