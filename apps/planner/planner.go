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
package planner

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
	if cfg.Agency == nil {
		per := &Agencies{}
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
	g, err := planexec.New(pc)
	if err != nil {
		return nil, err
	}
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
		Script:  Script,
		Retry:   apps.RetryFailedSteps,
		Events:  graph.EventCustom,
		Outcome: func(ctx context.Context, s graph.State) string { return Outcome(s, bookings(apps.Scope(ctx))) },
		Close:   apps.Closer(),
	}, nil
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

// Entry describes the app to runners: it is built from the Env's model,
// over the sample agency.
func Entry() apps.Entry {
	return apps.Entry{Name: Name, Summary: Summary, Script: Script,
		Open: func(ctx context.Context, env apps.Env) (*apps.App, error) {
			return New(ctx, Config{Model: env.Model})
		}}
}
