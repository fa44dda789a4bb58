package planexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/template"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// replanNode revises the plan after a level that held a step named in
// replan. The model gives the steps still to do; the finished steps stay
// as they were, with their results, and never run again. A reply that
// never makes a valid plan leaves the plan as it was (minus the replan
// entries just used), so the run goes on.
//
// A plan a person approved is never silently replaced: a revision that
// changes, drops or adds steps of it goes back to review (a new
// PlanReview, Revised), unless KeepApproved keeps the approved steps as
// they were and adds only the replanner's new ones.
func (a *agent) replanNode(ctx context.Context, s graph.State) (graph.Output, error) {
	old := CurrentPlan.Get(s)
	results := Steps.Get(s)
	approved := approvedKey.Get(s)
	review := a.ConfirmPlan && !a.nested(ctx) && len(approved.Steps) > 0
	revise := func(p Plan) Plan {
		if review && a.KeepApproved {
			return keepApproved(old, approved, p, results)
		}
		return merge(old, p, results)
	}
	d := a.data()
	d.Task, d.Steps, d.Results = old.Task, old.Steps, reports(old, results)
	prompt := a.render(ctx, func(t *templates) *template.Template { return t.Replan }, d)
	req := &llm.Request{Messages: []llm.Message{
		llm.System(a.system(prompt + "\nReply with only a JSON object of this shape:\n" + planShapeNoComplexity)),
	}}
	req.Messages = append(req.Messages, conversation(Messages.Get(s))...)
	head := len(req.Messages)
	report := replanReport(old, results)
	feedback := feedbackKey.Get(s)
	if feedback != "" {
		report = replanFeedback(old, results, feedback)
	}
	req.Messages = append(req.Messages, llm.User(report))
	check := func(p Plan) []string { return revise(p).problems() }
	r, err := callContract(ctx, a.phase(a.Phases.Plan, s, head), req, check, false)
	var plan Plan
	switch {
	case err == nil:
		plan = revise(r.value)
	case errors.Is(err, llm.ErrContract):
		a.log.WarnContext(ctx, "planexec: replanning gave no usable plan; keeping the plan as it was", slog.Any("error", err))
		plan = old
		plan.Replan = pendingOnly(old.Replan, results)
	default:
		return nil, fmt.Errorf("planexec: replanning failed: %w", err)
	}
	emit(ctx, Event{Kind: EventReplanned, Plan: &plan})
	ws := graph.Writes(CurrentPlan.Set(plan), Rounds.Set(r.requests), Tokens.Set(r.tokens))
	if feedback != "" {
		ws = append(ws, feedbackKey.Set(""))
	}
	if missed := missedChecks(results); len(missed) > 0 {
		ws = append(ws, Steps.Set(missed))
	}
	next := DispatchNode
	if review && !a.KeepApproved && len(changedSteps(approved, plan, results)) > 0 {
		next = ReviewNode
	}
	return graph.Command{Goto: []graph.Target{graph.To(next)}, Update: ws}, nil
}

// replanFeedback tells the planner that the person rejected its revised
// plan, and why.
func replanFeedback(p Plan, results map[string]StepResult, feedback string) string {
	var b strings.Builder
	plan, _ := json.Marshal(p)
	fmt.Fprintf(&b, "The revised plan:\n%s\n\nThe finished steps:\n", plan)
	for _, st := range p.Steps {
		if r, ok := results[st.ID]; ok {
			fmt.Fprintf(&b, "\n[%s] %s (%s):\n%s\n", st.ID, st.Title, r.Status, cmpOr(r.Result, r.Error))
			for _, c := range r.Undone {
				fmt.Fprintf(&b, "Did not happen: %s\n", c)
			}
		}
	}
	fmt.Fprintf(&b, "\nThe user rejected the revised plan. Their feedback: %s\nGive the steps still to do, following it.", feedback)
	return b.String()
}

// missedChecks returns the results whose missed check has not yet led to
// replanning, marked as having done so.
func missedChecks(results map[string]StepResult) map[string]StepResult {
	out := map[string]StepResult{}
	for id, r := range results {
		if r.Check != "" && !r.Replanned {
			r.Replanned = true
			out[id] = r
		}
	}
	return out
}

const planShapeNoComplexity = `{"task": "...", "steps": [{"id": "s4", "title": "...", "description": "...", "depends_on": ["s1"], "done_when": "..."}], "replan": []}`

// replanReport tells the planner where the plan stands.
func replanReport(p Plan, results map[string]StepResult) string {
	var b strings.Builder
	plan, _ := json.Marshal(p)
	fmt.Fprintf(&b, "The current plan:\n%s\n\nThe finished steps:\n", plan)
	var triggers []string
	for _, st := range p.Steps {
		r, ok := results[st.ID]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n[%s] %s (%s):\n%s\n", st.ID, st.Title, r.Status, cmpOr(r.Result, r.Error))
		for _, c := range r.Undone {
			fmt.Fprintf(&b, "Did not happen: %s\n", c)
		}
		if r.Check != "" && !r.Replanned {
			fmt.Fprintf(&b, "Its result misses its done_when (%s): %s\n", st.DoneWhen, r.Check)
			triggers = append(triggers, st.ID)
			continue
		}
		for _, id := range p.Replan {
			if id == st.ID {
				triggers = append(triggers, id)
			}
		}
	}
	fmt.Fprintf(&b, "\nSteps %s asked for the plan to be revised now. Give the steps still to do (add steps to finish what a step missed).", strings.Join(triggers, ", "))
	return b.String()
}
