// Package planner is the plan-and-execute app: an agent (agent/planexec
// with PlanMode, AskMode and ConfirmPlan) that organises a team offsite
// through a made-up events agency.
//
// The planner first asks the person what it cannot look up: the city (a
// choice) and then a form (how many people, a number from 1 to 40; how
// long, a choice; anything to keep in mind, free text). A form answer that
// does not fit is asked again with the problems. The person confirms the
// plan, whose steps run as a dependency graph: finding venues and picking
// an activity in parallel, then checking availability and estimating the
// budget in parallel, then booking. Finding venues is a replan step: once
// its level is done the planner revises the remaining steps (in the
// scripted scenario, to check each of the two venues found), and the steps
// already finished keep their results and never run again. Booking is a
// write tool, so it waits for the person's approval. The agent delivers a
// summary.
//
// # Embedding
//
// New(ctx, Config{Model}) builds the app; each data scope
// (apps.WithScope) gets its own sample agency unless Config.Agency gives a
// shared one. See Example and Config.
//
// # Configuring
//
// Each phase of the agent can run on its own model with its own options,
// the prompts are templates, and the budgets, the questions and the
// done_when checks are tunable:
//
//	app, err := planner.New(ctx, planner.Config{
//		Model: model,
//		Phases: planexec.Phases{
//			Plan:    llm.Settings{Model: strong, ReasoningEffort: "high"},
//			Execute: llm.Settings{Temperature: &zero, MaxTokens: 2000},
//			Judge:   llm.Settings{Model: small},
//		},
//		Prompts: planexec.Prompts{Deliver: "Answer in French. Sum up {{len .Steps}} steps."},
//		Tune: func(c *planexec.Config) {
//			c.StepRounds, c.TimeBudget, c.TokenBudget = 50, 10*time.Minute, 200_000
//			c.CheckSteps, c.OnPlanFailure = true, planexec.PlanFallbackAsk
//		},
//	})
//
// `trellis serve` reads the same from an assistant's config.configurable
// "planner" object in trellis.yaml (planexec.Options; phase models are
// names under models, or specs):
//
//	assistants:
//	  - graph: planner
//	    name: Offsite planner
//	    model: default
//	    config:
//	      configurable:
//	        planner:
//	          max_asks: 2
//	          step_rounds: 50
//	          time_budget: 10m
//	          token_budget: 200000
//	          on_plan_failure: ask          # or single_step (default), fail
//	          check_steps: true
//	          phases:
//	            plan: {model: strong, reasoning_effort: high}
//	            execute: {temperature: 0, max_tokens: 2000}
//	            judge: {model: small}
//	          history: {policy: token_budget, max_tokens: 8000}   # every phase's view of a long thread
//	          prompts:
//	            deliver: "Answer in French. Sum up {{len .Steps}} steps."
package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Task is the request the example starts with.
const Task = "Organise our team offsite next month: find a venue, pick an activity, keep the cost sensible and book it."

// System is added to every phase's instructions.
const System = "You work for a small company's office manager and organise team events through the events agency's tools. " +
	"Prices are in euros. Never book before the availability and the budget are known."

// RoundBudget bounds the model requests of one task.
const RoundBudget = 40

// Name is the app's name.
const Name = "planner"

// Summary says in one line what the app does.
const Summary = "plan-and-execute: asks (a choice, then a form), has the plan confirmed, runs it as a DAG of parallel levels, replans midway, books with approval"

// Config configures the planner app. Model is required; every other field
// has the default its comment names.
type Config struct {
	// Model asks, plans, runs the steps and delivers (required; Script()
	// for the scripted demo model).
	Model llm.Model
	// Agency is the events agency whose tools the agent uses, shared by
	// every thread of the App (bookings record their run's scope). Default:
	// a sample agency in memory per data scope (apps.WithScope), so each
	// thread books from its own venues.
	Agency *Agency
	// System is added to every phase's instructions (default System).
	System string
	// Request is the sample request App.Input("") uses (default Task).
	Request string
	// RoundBudget bounds the model requests of one task (default
	// RoundBudget).
	RoundBudget int
	// Phases sets each phase's model and options (default: Model with
	// the provider's defaults for every phase).
	Phases planexec.Phases
	// Prompts replaces the agent's prompt templates (default: planexec's).
	Prompts planexec.Prompts
	// Tune, when set, adjusts the agent's configuration last (budgets,
	// checks, the plan-failure policy...).
	Tune func(*planexec.Config)
	// Options are tunables as trellis.yaml writes them (applied after
	// Phases and Prompts, before Tune); Resolve resolves the models they
	// name (nil: naming a model is an error).
	Options planexec.Options
	Resolve func(name string) (llm.Model, error)
	// Middleware wraps the agent's model and tool calls, in order
	// (planexec.Config's Middleware; applied before Tune).
	Middleware []middleware.Middleware
}

// AgentConfig returns the planexec configuration over model and the
// agency's tools: planning, questions and plan confirmation on.
func AgentConfig(model llm.Model, agency *Agency) planexec.Config {
	return planexec.Config{
		Name:        "offsite-planner",
		Model:       model,
		System:      System,
		Tools:       agency.Tools(),
		PlanMode:    true,
		AskMode:     true,
		ConfirmPlan: true,
		RoundBudget: RoundBudget,
	}
}

// NewGraph builds the agent over model and agency.
func NewGraph(model llm.Model, agency *Agency) (*graph.Graph, error) {
	if agency == nil {
		return nil, fmt.Errorf("planner: the agency is nil; pass NewAgency()")
	}
	return planexec.New(AgentConfig(model, agency))
}

// New builds the planner app.
func New(_ context.Context, cfg Config) (*apps.App, error) {
	if cfg.Model == nil {
		return nil, errors.New("planner: Config.Model is nil; pass the llm.Model that plans (planner.Script() for the scripted demo)")
	}
	if cfg.Request == "" {
		cfg.Request = Task
	}
	bookings := func(scope string) []Booking { return cfg.Agency.BookingsIn(scope) }
	var pc planexec.Config
	var per *Agencies // one agency per scope when the caller gives none
	if cfg.Agency == nil {
		per = &Agencies{}
		pc = AgentConfig(cfg.Model, NewAgency())
		pc.Tools = per.Tools()
		bookings = func(scope string) []Booking { return per.For(scope).Bookings() }
	} else {
		pc = AgentConfig(cfg.Model, cfg.Agency)
	}
	if cfg.System != "" {
		pc.System = cfg.System
	}
	if cfg.RoundBudget > 0 {
		pc.RoundBudget = cfg.RoundBudget
	}
	pc.Phases, pc.Prompts = cfg.Phases, cfg.Prompts
	if err := cfg.Options.Apply(&pc, cfg.Resolve); err != nil {
		return nil, fmt.Errorf("planner: the options: %w", err)
	}
	pc.Middleware = append(pc.Middleware, cfg.Middleware...)
	if cfg.Tune != nil {
		cfg.Tune(&pc)
	}
	g, err := planexec.New(pc)
	if err != nil {
		return nil, err
	}
	app := &apps.App{
		Name:    Name,
		Summary: Summary,
		Graph:   g,
		Input: func(request string) graph.Update {
			if request == "" {
				request = cfg.Request
			}
			return planexec.Input(request)
		},
		Script:  Script,
		Retry:   apps.RetryFailedSteps,
		Events:  graph.EventCustom,
		Outcome: func(ctx context.Context, s graph.State) string { return Outcome(s, bookings(apps.Scope(ctx))) },
		Close:   apps.Closer(),
	}
	if per != nil {
		app.DeleteScope = func(_ context.Context, scope string) error {
			per.Delete(scope)
			return nil
		}
	}
	return app, nil
}

// Outcome renders a finished run for the person: the delivered answer,
// every step of the final plan with its status, and the bookings made.
func Outcome(s graph.State, bookings []Booking) string {
	var b strings.Builder
	if answer, ok := planexec.Answer(s); ok {
		fmt.Fprintf(&b, "Answer:\n%s\n", answer)
	} else {
		b.WriteString("No answer was delivered.\n")
	}
	plan := planexec.CurrentPlan.Get(s)
	results := planexec.Steps.Get(s)
	if len(plan.Steps) > 0 {
		b.WriteString("\nSteps:\n")
	}
	for _, st := range plan.Steps {
		r, ok := results[st.ID]
		status, detail := "not run", ""
		if ok {
			status = string(r.Status)
			detail = r.Error
			for _, c := range r.Undone {
				detail = strings.TrimPrefix(detail+"; not carried out: "+c.String(), "; ")
			}
		}
		fmt.Fprintf(&b, "  [%s] %s: %s", status, st.ID, st.Title)
		if detail != "" {
			fmt.Fprintf(&b, " (%s)", detail)
		}
		b.WriteByte('\n')
	}
	if len(bookings) > 0 {
		b.WriteString("\nBookings:\n")
		for _, bk := range bookings {
			fmt.Fprintf(&b, "  %s\n", bk)
		}
	}
	return b.String()
}

// OptionsKey is the key of the planner's options (planexec.Options) in an
// assistant's config.configurable.
const OptionsKey = "planner"

// Entry describes the app to runners: it is built from the Env's model,
// over the sample agency, with the options under OptionsKey in
// env.Configurable or, when the assistant sets none there, the app's
// settings (env.Settings: trellis.yaml's apps.planner section or the
// assistant's config.configurable.settings), both planexec.Options;
// models they name are resolved with env.Resolve.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script,
		Start: apps.Start{Examples: []string{"Plan our team offsite", "Plan a two-day workshop for 12 people", "Organise a team trip in the spring"}},
		Check: func(settings json.RawMessage) error {
			if _, err := planexec.DecodeOptions(settings); err != nil {
				return fmt.Errorf("planner: apps.planner settings: %w", err)
			}
			return nil
		},
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			opts, set, err := optionsFrom(env.Configurable)
			if err != nil {
				return nil, err
			}
			if !set && len(env.Settings) > 0 && string(env.Settings) != "null" {
				if opts, err = planexec.DecodeOptions(env.Settings); err != nil {
					return nil, fmt.Errorf("planner: apps.planner settings: %w", err)
				}
			}
			return New(ctx, Config{Model: env.Model, Options: opts, Resolve: env.Resolve, Middleware: env.Middleware})
		}}
}

// optionsFrom reads the planner's options from a configurable object and
// says whether it had any.
func optionsFrom(configurable json.RawMessage) (planexec.Options, bool, error) {
	if len(configurable) == 0 || string(configurable) == "null" {
		return planexec.Options{}, false, nil
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(configurable, &c); err != nil {
		return planexec.Options{}, false, fmt.Errorf("planner: config.configurable is not a JSON object: %w", err)
	}
	raw, ok := c[OptionsKey]
	if !ok || string(raw) == "null" {
		return planexec.Options{}, false, nil
	}
	o, err := planexec.DecodeOptions(raw)
	if err != nil {
		return planexec.Options{}, false, fmt.Errorf("planner: config.configurable.%s: %w", OptionsKey, err)
	}
	return o, true, nil
}
