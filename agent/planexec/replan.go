package planexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// replanNode revises the plan after a level that held a step named in
// replan. The model gives the steps still to do; the finished steps stay
// as they were, with their results, and never run again. A reply that
// never makes a valid plan leaves the plan as it was (minus the replan
// entries just used), so the run goes on.
func (a *agent) replanNode(ctx context.Context, s graph.State) (graph.Output, error) {
	old := CurrentPlan.Get(s)
	results := Steps.Get(s)
	req := &llm.Request{Messages: []llm.Message{
		llm.System(a.system(a.prompts.Replan + "\nReply with only a JSON object of this shape:\n" + planShapeNoComplexity)),
	}}
	req.Messages = append(req.Messages, conversation(Messages.Get(s))...)
	req.Messages = append(req.Messages, llm.User(replanReport(old, results)))
	check := func(p Plan) []string { return merge(old, p, results).problems() }
	r, err := callContract(ctx, a.Model, req, check, false)
	var plan Plan
	switch {
	case err == nil:
		plan = merge(old, r.value, results)
	case errors.Is(err, llm.ErrContract):
		a.log.WarnContext(ctx, "planexec: replanning gave no usable plan; keeping the plan as it was", slog.Any("error", err))
		plan = old
		plan.Replan = pendingOnly(old.Replan, results)
	default:
		return nil, fmt.Errorf("planexec: replanning failed: %w", err)
	}
	emit(ctx, Event{Kind: EventReplanned, Plan: &plan})
	return graph.Writes(CurrentPlan.Set(plan), Rounds.Set(r.requests)), nil
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
		for _, id := range p.Replan {
			if id == st.ID {
				triggers = append(triggers, id)
			}
		}
	}
	fmt.Fprintf(&b, "\nSteps %s asked for the plan to be revised now. Give the steps still to do.", strings.Join(triggers, ", "))
	return b.String()
}
