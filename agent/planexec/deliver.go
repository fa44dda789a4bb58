package planexec

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// deliverNode writes the final answer from the step results. When the
// model fails (or answers with nothing), the answer is a mechanical
// summary: the steps and their status.
func (a *agent) deliverNode(ctx context.Context, s graph.State) (graph.Output, error) {
	plan := CurrentPlan.Get(s)
	results := Steps.Get(s)
	used := Rounds.Get(s)
	report := deliveryReport(plan, results, used >= a.RoundBudget, a.RoundBudget)
	req := &llm.Request{Messages: []llm.Message{llm.System(a.system(a.prompts.Deliver))}}
	req.Messages = append(req.Messages, conversation(Messages.Get(s))...)
	req.Messages = append(req.Messages, llm.User(report))
	var text string
	rounds := 0
	resp, err := llm.Call(ctx, a.Model, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		a.log.WarnContext(ctx, "planexec: the model could not write the final answer; delivering a mechanical summary", slog.Any("error", err))
	default:
		rounds = int(max(resp.Usage.Requests, 1))
		text = strings.TrimSpace(resp.Message.Text())
		if text == "" {
			a.log.WarnContext(ctx, "planexec: the model's final answer was empty; delivering a mechanical summary")
		}
	}
	if text == "" {
		text = MechanicalSummary(plan, results)
	}
	emit(ctx, Event{Kind: EventDelivered, Text: text})
	return graph.Writes(
		graph.Append(Messages, llm.Assistant(text)),
		Summary.Set(text),
		Rounds.Set(rounds),
	), nil
}

// deliveryReport gives the model the plan's outcome.
func deliveryReport(plan Plan, results map[string]StepResult, budgetOut bool, budget int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The task: %s\n\nThe steps and their results:\n", plan.Task)
	var notRun []string
	for _, st := range plan.Steps {
		r, ok := results[st.ID]
		if !ok {
			notRun = append(notRun, st.ID)
			fmt.Fprintf(&b, "\n[%s] %s: not run\n", st.ID, st.Title)
			continue
		}
		fmt.Fprintf(&b, "\n[%s] %s: %s\n%s\n", st.ID, st.Title, r.Status, cmpOr(r.Result, r.Error))
	}
	if budgetOut && len(notRun) > 0 {
		fmt.Fprintf(&b, "\nThe budget of %d model requests ran out before steps %s could run.\n", budget, strings.Join(notRun, ", "))
	}
	return b.String()
}

// MechanicalSummary lists a plan's steps with their status and result or
// error, one line each: the answer delivered when the model cannot write
// one.
func MechanicalSummary(plan Plan, results map[string]StepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task: %s\n", plan.Task)
	for _, st := range plan.Steps {
		r, ok := results[st.ID]
		status, detail := "not run", ""
		if ok {
			status, detail = string(r.Status), cmpOr(r.Result, r.Error)
		}
		line := fmt.Sprintf("- [%s] %s: %s", status, st.ID, st.Title)
		if detail != "" {
			first, _, _ := strings.Cut(strings.TrimSpace(detail), "\n")
			line += " — " + first
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// finishNode delivers the answer of a task run without a plan.
func (a *agent) finishNode(ctx context.Context, s graph.State) (graph.Output, error) {
	text, _ := react.Answer(s)
	emit(ctx, Event{Kind: EventDelivered, Text: text})
	return graph.Writes(Summary.Set(text)), nil
}
