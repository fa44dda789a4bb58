package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// Request is what the person asks in the demo.
const Request = "Plan my study week: fit my pending tasks into free time this week."

// System is the default system prompt, a text/template over PromptData.
const System = `You manage a student's study schedule for one week.
Days are numbered 1 ({{.FirstDay}}) to {{.Days}} ({{.LastDay}}), slots 1 to {{.Slots}} within a day.
Events are classes; tasks are study work. A task placed entirely inside an
event that accepts embedding (a study hall) is embedded in it. A task's
category names its task class, whose excluded days it is never placed on.
Read before you write: use get_overview, find_free and list_tasks;
diagnose_schedule scores the week and proposes moves. Every change
(place, move, swap, batch_move, unplace, upsert_task_class,
optimize_schedule) is confirmed by the student.{{if .Groups}}
Tools come in groups; yours now: {{.Groups}}. Add a group with tools_add
when you need it and remove it with tools_remove when you are done.{{end}}`

// PromptData is what the System template sees.
type PromptData struct {
	// Days and Slots are the seed week's size; FirstDay and LastDay the
	// names of its first and last day.
	Days, Slots       int
	FirstDay, LastDay string
	// Groups lists the tool groups active at the start, when
	// Config.ToolGroups is on ("" otherwise).
	Groups string
}

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
	// System is the system prompt template (default System; it sees
	// PromptData).
	System string
	// ToolGroups sorts the tools into groups (Groups): the agent starts
	// with the read tools and ActiveGroups, and adds or removes groups
	// itself (tools_add / tools_remove). Default false: every tool is
	// offered all the time.
	ToolGroups bool
	// ActiveGroups are the groups active when a step starts (default:
	// GroupEdit and GroupHealth).
	ActiveGroups []string
	// Request is the sample request App.Input("") uses (default Request).
	Request string
	// Phases are the agent's per-phase model settings (planexec.Phases:
	// intent, ask, plan, execute, deliver, judge; zero: Model with the
	// provider's defaults).
	Phases planexec.Phases
	// History is the agent's message-history policy (planexec.Config's
	// History; nil: the whole conversation).
	History history.Policy
	// Middleware wraps the agent's model and tool calls, in order
	// (planexec.Config's Middleware).
	Middleware []middleware.Middleware
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
	g, err := build(cfg, store)
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
		DeleteScope: func(ctx context.Context, scope string) error {
			_, err := store.DeleteScope(ctx, scope)
			return err
		},
		Close: apps.Closer(store.Close),
	}, nil
}

// NewGraph builds the planning agent over the schedules in store; tools
// work on the run's scope (apps.Scope, else scope), seeded with seed.
func NewGraph(model llm.Model, store *Store, scope string, seed func() *Schedule, system string) (*graph.Graph, error) {
	if seed == nil {
		seed = Sample
	}
	return build(Config{Model: model, Scope: scope, Seed: seed, System: system}, store)
}

func build(cfg Config, store *Store) (*graph.Graph, error) {
	system := cfg.System
	if system == "" {
		system = System
	}
	w := cfg.Seed().Window
	data := PromptData{Days: w.Days, Slots: w.Slots, FirstDay: w.DayName(1), LastDay: w.DayName(w.Days)}
	tools := Tools(store, cfg.Scope, cfg.Seed)
	pc := planexec.Config{
		Name:        Name,
		Model:       cfg.Model,
		Tools:       tools,
		PlanMode:    true,
		AskMode:     true,
		ConfirmPlan: true,
		// A step that fails (a model timeout, a server error) stops the
		// run, so the thread can be resumed and the step retried
		// (App.Retry); delivering around it would hide the failure behind
		// a summary and leave the thread finished.
		ContinueOnError: false,
		Phases:          cfg.Phases,
		History:         cfg.History,
		Middleware:      cfg.Middleware,
	}
	if cfg.ToolGroups {
		read, groups := Groups(tools)
		active := cfg.ActiveGroups
		if active == nil {
			active = []string{GroupEdit, GroupHealth}
		}
		for _, g := range active {
			if groups[g] == nil {
				return nil, fmt.Errorf("scheduler: Config.ActiveGroups names %q, which is no tool group; the groups are %s", g, groupNames())
			}
		}
		pc.Tools, pc.Packs, pc.ActivePacks = read, groups, active
		data.Groups = strings.Join(active, ", ")
	}
	prompt, err := apps.Prompt("scheduler.system", system, data)
	if err != nil {
		return nil, fmt.Errorf("scheduler: Config.System: %w", err)
	}
	pc.System = prompt
	return planexec.New(pc)
}

// Settings is the part of Config that trellis.yaml's apps.scheduler
// carries (see Entry); every field is optional.
type Settings struct {
	// System overrides the system prompt template (PromptData).
	System string `json:"system,omitempty"`
	// ToolGroups and ActiveGroups are Config's.
	ToolGroups   bool     `json:"tool_groups,omitempty"`
	ActiveGroups []string `json:"active_groups,omitempty"`
	// Classes are task classes every new scope's week starts with.
	Classes []Class `json:"classes,omitempty"`
	// Phases are per-phase model settings by phase name (intent, ask,
	// plan, execute, deliver, judge), models by name.
	Phases map[string]llm.SettingsSpec `json:"phases,omitempty"`
	// History is the agent's history policy.
	History *history.Spec `json:"history,omitempty"`
}

// Entry describes the app to runners: the schedules live in the Env's
// database, scoped by the Env's scope (the thread), reset when Fresh;
// Env.Settings is a Settings object.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script, Check: apps.CheckSettings[Settings],
		Start: apps.Start{Examples: []string{"Plan my study week", "Fit two more revision sessions before Friday", "Move my maths practice to the mornings"}},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			var st Settings
			if err := env.Decode(&st); err != nil {
				return nil, fmt.Errorf("scheduler: %w", err)
			}
			seed := Sample
			if len(st.Classes) > 0 {
				base := Sample()
				for _, c := range st.Classes {
					next, err := base.UpsertClass(c)
					if err != nil {
						return nil, fmt.Errorf("scheduler: settings: class %q: %w", c.Name, err)
					}
					base = next
				}
				seed = base.Clone
			}
			// The planner's options carry the phases and the history;
			// they are applied to a bare config to resolve and check them.
			var pc planexec.Config
			pc.Model = env.Model
			if err := (planexec.Options{Phases: st.Phases, History: st.History}).Apply(&pc, env.Resolve); err != nil {
				return nil, fmt.Errorf("scheduler: settings: %w", err)
			}
			return New(ctx, Config{Model: env.Model, Database: env.Database, Scope: env.Scope, Fresh: env.Fresh, Seed: seed,
				System: st.System, ToolGroups: st.ToolGroups, ActiveGroups: st.ActiveGroups, Phases: pc.Phases, History: pc.History,
				Middleware: env.Middleware})
		}}
}
