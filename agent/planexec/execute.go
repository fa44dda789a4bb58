package planexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// stepTask is the payload of one step's task.
type stepTask struct {
	ID string `json:"id"`
	// Rounds is the step's share of the round budget: its loop's model
	// requests are bounded by it.
	Rounds int `json:"rounds"`
}

type stepKey struct{}

// stepFrom returns the ID of the step whose loop is running, or "".
func stepFrom(ctx context.Context) string {
	id, _ := ctx.Value(stepKey{}).(string)
	return id
}

// dispatchNode decides what happens after planning and after each level:
// it skips the dependents of failed steps, stops the run on failures
// (without ContinueOnError), sends the run to replanning after a replan
// step, delivers when the plan is done or the round budget is used up,
// and otherwise starts the next level's steps, one task each.
func (a *agent) dispatchNode(ctx context.Context, s graph.State) (graph.Output, error) {
	plan := CurrentPlan.Get(s)
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	results := Steps.Get(s)
	skips := a.skips(ctx, plan, results)
	finished := func(id string) bool {
		_, done := results[id]
		_, skipped := skips[id]
		return done || skipped
	}
	failed := map[string]string{}
	for id, r := range results {
		if r.Status == StepFailed {
			failed[id] = r.Error
		}
	}
	var update graph.Update
	if len(skips) > 0 {
		update = graph.Writes(Steps.Set(skips))
	}
	to := func(targets ...graph.Target) (graph.Output, error) {
		return graph.Command{Goto: targets, Update: update}, nil
	}
	if len(failed) > 0 && !a.ContinueOnError {
		return nil, &StepError{Failed: failed}
	}
	for _, id := range plan.Replan {
		if _, ok := results[id]; ok {
			return to(graph.To(ReplanNode))
		}
	}
	used := Rounds.Get(s)
	wave := plan.ready(finished)
	if len(wave) == 0 || used >= a.RoundBudget {
		return to(graph.To(DeliverNode))
	}
	if a.MaxParallel > 0 && len(wave) > a.MaxParallel {
		wave = wave[:a.MaxParallel]
	}
	share := max(1, (a.RoundBudget-used)/len(wave))
	targets := make([]graph.Target, len(wave))
	for i, st := range wave {
		targets[i] = graph.Send(StepNode, stepTask{ID: st.ID, Rounds: share})
		emit(ctx, Event{Kind: EventStepStarted, StepID: st.ID, Title: st.Title})
	}
	return to(targets...)
}

// skips marks the steps that cannot run because a step they depend on
// failed or was skipped, transitively.
func (a *agent) skips(ctx context.Context, plan Plan, results map[string]StepResult) map[string]StepResult {
	out := map[string]StepResult{}
	status := func(id string) (StepStatus, bool) {
		if r, ok := results[id]; ok {
			return r.Status, true
		}
		r, ok := out[id]
		return r.Status, ok
	}
	for changed := true; changed; {
		changed = false
		for _, st := range plan.Steps {
			if _, ok := status(st.ID); ok {
				continue
			}
			for _, d := range st.DependsOn {
				if ds, ok := status(d); ok && ds != StepDone {
					out[st.ID] = StepResult{Status: StepSkipped, Error: fmt.Sprintf("step %q, which it depends on, %s", d, ds)}
					changed = true
					break
				}
			}
		}
	}
	for _, st := range plan.Steps {
		if r, ok := out[st.ID]; ok {
			emit(ctx, Event{Kind: EventStepSkipped, StepID: st.ID, Title: st.Title, Error: r.Error})
		}
	}
	return out
}

// stepNode runs one step as a ReAct loop invoked from the step's task. The
// loop checkpoints in the task's namespace, so an interrupt inside it (a
// question, a tool approval) stops the run and, once answered, the loop
// continues where it stopped. Any other error fails the step, not the run.
func (a *agent) stepNode(ctx context.Context, s graph.State, t stepTask) (graph.Output, error) {
	plan := CurrentPlan.Get(s)
	st, ok := plan.Step(t.ID)
	if !ok {
		return nil, fmt.Errorf("planexec: step %q is not in the current plan (its steps are %s); the plan changed under a running step", t.ID, idList(plan.Steps))
	}
	prompt := stepPrompt(plan, st, Steps.Get(s))
	limit := 2*max(t.Rounds, 1) - 1 // a model step per round, a tool step between two
	res, err := a.steps.Invoke(context.WithValue(ctx, stepKey{}, st.ID),
		graph.Writes(graph.Append(react.Messages, llm.User(prompt))), graph.WithStepLimit(limit))
	if errors.Is(err, graph.ErrInterrupted) {
		emitWaiting(ctx, st.ID, err)
		return nil, err
	}
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	r := StepResult{Requests: requests(res)}
	if err == nil {
		if answer, ok := react.AnswerFrom(react.Messages.Get(res.State)); ok {
			r.Status, r.Result = StepDone, answer
		} else {
			err = errors.New("the step's loop ended without an answer")
		}
	}
	if err != nil {
		r.Status, r.Error = StepFailed, err.Error()
		a.log.WarnContext(ctx, "planexec: a step failed", slog.String("step", st.ID), slog.Any("error", err))
		emit(ctx, Event{Kind: EventStepFailed, StepID: st.ID, Title: st.Title, Error: r.Error})
	} else {
		emit(ctx, Event{Kind: EventStepFinished, StepID: st.ID, Title: st.Title, Result: r.Result})
	}
	return graph.Writes(Steps.Set(map[string]StepResult{st.ID: r}), Rounds.Set(r.Requests)), nil
}

// requests counts a step's model requests: its loop's usage, or its
// replies when more (usage covers one Invoke, and a loop resumed after an
// interrupt made some of its requests in an earlier one).
func requests(res *graph.Result) int {
	if res == nil {
		return 0
	}
	replies := 0
	for _, m := range react.Messages.Get(res.State) {
		if m.Role == llm.RoleAssistant {
			replies++
		}
	}
	return max(int(res.Usage().Requests), replies)
}

// stepPrompt is the user message that starts a step's loop: the task, the
// plan, the step, and the results of the steps it depends on.
func stepPrompt(plan Plan, st Step, results map[string]StepResult) string {
	var b strings.Builder
	b.Grow(256 + 32*len(plan.Steps))
	b.WriteString("The whole task: ")
	b.WriteString(plan.Task)
	b.WriteString("\n\nThe plan:\n")
	for _, p := range plan.Steps {
		b.WriteString("- ")
		b.WriteString(p.ID)
		b.WriteString(": ")
		b.WriteString(p.Title)
		if p.ID == st.ID {
			b.WriteString("  <- your step")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nYour step is ")
	b.WriteString(st.ID)
	b.WriteString(": ")
	b.WriteString(st.Title)
	b.WriteByte('\n')
	if st.Description != "" {
		b.WriteString(st.Description)
		b.WriteByte('\n')
	}
	if st.DoneWhen != "" {
		b.WriteString("It is done when: ")
		b.WriteString(st.DoneWhen)
		b.WriteByte('\n')
	}
	if len(st.DependsOn) > 0 {
		b.WriteString("\nResults of the steps it depends on:\n")
		for _, d := range st.DependsOn {
			dep, _ := plan.Step(d)
			fmt.Fprintf(&b, "\n[%s] %s:\n%s\n", d, dep.Title, results[d].Result)
		}
	}
	return b.String()
}
