package planexec

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"text/template"

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
	stop := Stopped.Get(s)
	if stop == "" && Rounds.Get(s) >= a.RoundBudget {
		stop = BudgetRounds
	}
	report := a.deliveryReport(plan, results, stop)
	d := a.data()
	d.Task, d.Steps, d.Results = plan.Task, plan.Steps, reports(plan, results)
	prompt := a.render(ctx, func(t *templates) *template.Template { return t.Deliver }, d)
	req := &llm.Request{Messages: []llm.Message{llm.System(a.system(prompt))}}
	req.Messages = append(req.Messages, conversation(Messages.Get(s))...)
	head := len(req.Messages)
	req.Messages = append(req.Messages, llm.User(report))
	var text string
	rounds, tokens := 0, 0
	resp, err := a.phase(a.Phases.Deliver, s, head).ask(ctx, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		a.log.WarnContext(ctx, "planexec: the model could not write the final answer; delivering a mechanical summary", slog.Any("error", err))
	default:
		rounds = int(max(resp.Usage.Requests, 1))
		tokens = tokensOf(resp.Usage)
		text = strings.TrimSpace(resp.Message.Text())
		if text == "" {
			a.log.WarnContext(ctx, "planexec: the model's final answer was empty; delivering a mechanical summary")
		}
	}
	if text == "" {
		text = MechanicalSummary(plan, results)
		if why := a.budgetNote(stop, plan, results); why != "" {
			text += "\n" + why
		}
	}
	emit(ctx, Event{Kind: EventDelivered, Text: text})
	return graph.Writes(
		graph.Append(Messages, llm.Assistant(text)),
		Summary.Set(text),
		Rounds.Set(rounds),
		Tokens.Set(tokens),
	), nil
}

// deliveryReport gives the model the plan's outcome: each step's status
// and result or error, the budget that ended a step or stopped the plan,
// and what a step's result missed of its done_when.
func (a *agent) deliveryReport(plan Plan, results map[string]StepResult, stop string) string {
	var b strings.Builder
	b.WriteString("The task: ")
	b.WriteString(plan.Task)
	b.WriteString("\n\nThe steps and their results:\n")
	undone := false
	for _, st := range plan.Steps {
		r, ok := results[st.ID]
		b.WriteString("\n[")
		b.WriteString(st.ID)
		b.WriteString("] ")
		b.WriteString(st.Title)
		if !ok {
			b.WriteString(": not run\n")
			continue
		}
		b.WriteString(": ")
		b.WriteString(string(r.Status))
		b.WriteByte('\n')
		b.WriteString(cmpOr(r.Result, r.Error))
		b.WriteByte('\n')
		if r.Budget != "" {
			fmt.Fprintf(&b, "(This step was cut short: %s.)\n", a.budgetText(r.Budget, true))
		}
		if r.Check != "" {
			fmt.Fprintf(&b, "(This step's result does not meet its goal (%s): %s.)\n", st.DoneWhen, r.Check)
		}
		if len(r.Undone) > 0 {
			undone = true
			b.WriteString("What this step tried that did NOT happen:\n")
			for _, c := range r.Undone {
				fmt.Fprintf(&b, "- %s\n", c)
			}
		}
	}
	if undone {
		b.WriteString("\nActions that a person rejected or that failed did not happen: do not say they were done. " +
			"Say plainly in the answer what did not happen and why, giving the person's reason when they gave one.\n")
	}
	why := a.budgetNote(stop, plan, results)
	if why != "" {
		b.WriteString("\n" + why + "\n")
	}
	if why != "" || hasBudgetHit(results) {
		b.WriteString("Say plainly in the answer which budget ran out and what was left undone because of it.\n")
	}
	return b.String()
}

// budgetNote says which steps did not run because a budget stopped the
// plan, or "".
func (a *agent) budgetNote(stop string, plan Plan, results map[string]StepResult) string {
	if stop == "" {
		return ""
	}
	var notRun []string
	for _, st := range plan.Steps {
		if _, ok := results[st.ID]; !ok {
			notRun = append(notRun, st.ID)
		}
	}
	if len(notRun) == 0 {
		return ""
	}
	return fmt.Sprintf("The %s before steps %s could run.", a.budgetText(stop, false), strings.Join(notRun, ", "))
}

// budgetText names a budget and its size, as "the budget of 40 model
// requests ran out"; step says it was the step's own share.
func (a *agent) budgetText(budget string, step bool) string {
	switch budget {
	case BudgetRounds:
		if step {
			return "its budget of model requests (tool rounds) ran out"
		}
		return fmt.Sprintf("budget of %d model requests ran out", a.RoundBudget)
	case BudgetTokens:
		if step {
			return "its share of the token budget ran out"
		}
		return fmt.Sprintf("token budget of %d tokens ran out", a.TokenBudget)
	case BudgetTime:
		if step {
			return fmt.Sprintf("the time budget of %v passed", a.TimeBudget)
		}
		return fmt.Sprintf("time budget of %v passed", a.TimeBudget)
	}
	return budget + " budget ran out"
}

func hasBudgetHit(results map[string]StepResult) bool {
	for _, r := range results {
		if r.Budget != "" {
			return true
		}
	}
	return false
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
			if r.Budget != "" {
				status += ", " + r.Budget + " budget ran out"
			}
			if r.Check != "" {
				status += ", goal not met: " + r.Check
			}
			if len(r.Undone) > 0 {
				status += ", " + undoneText(r.Undone)
			}
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
