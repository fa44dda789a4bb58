// Package planner is the plan-and-execute example: an agent (agent/planexec
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
package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/console"
	"github.com/trellis-agents/trellis/llm"
)

// Task is the request the example starts with.
const Task = "Organise our team offsite next month: find a venue, pick an activity, keep the cost sensible and book it."

// System is added to every phase's instructions.
const System = "You work for a small company's office manager and organise team events through the events agency's tools. " +
	"Prices are in euros. Never book before the availability and the budget are known."

// RoundBudget bounds the model requests of one task.
const RoundBudget = 40

// Config returns the agent's configuration over model and the agency's
// tools: planning, questions and plan confirmation on.
func Config(model llm.Model, agency *Agency) planexec.Config {
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

// New builds the agent over model and agency.
func New(model llm.Model, agency *Agency) (*graph.Graph, error) {
	if agency == nil {
		return nil, fmt.Errorf("planner: the agency is nil; pass NewAgency()")
	}
	return planexec.New(Config(model, agency))
}

// Example describes the example for the CLI.
func Example() examples.Example {
	return examples.Example{
		Name:    "planner",
		Summary: "plan-and-execute: asks (a choice, then a form), has the plan confirmed, runs it as a DAG of parallel levels, replans midway, books with approval",
		Script:  Script,
		Open: func(_ context.Context, env examples.Env) (*examples.Instance, error) {
			agency := NewAgency()
			g, err := New(env.Model, agency)
			if err != nil {
				return nil, err
			}
			view := &console.PlanView{} // one per session: a plan shown as ready is not shown again for review
			return &examples.Instance{
				Graph:    g,
				Input:    planexec.Input(Task),
				Handlers: []console.Handler{console.PlanAsk, view.Review},
				Events:   graph.EventCustom,
				Print:    view.Print,
				Outcome:  func(s graph.State) string { return Outcome(s, agency.Bookings()) },
			}, nil
		},
	}
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
