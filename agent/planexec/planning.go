package planexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// planShape shows the planner the JSON it must send.
const planShape = `{"complexity": "simple", "task": "...", "steps": [{"id": "s1", "title": "...", "description": "...", "depends_on": [], "done_when": "..."}], "replan": []}`

// intentNode starts every input: it clears the previous task's state and
// answers chat at once, sending tasks to next.
func (a *agent) intentNode(next string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		reset := graph.Writes(
			PlanMessages.Overwrite(nil),
			CurrentPlan.Overwrite(Plan{}),
			Steps.Overwrite(map[string]StepResult{}),
		)
		task := graph.Command{Goto: []graph.Target{graph.To(next)}}
		if a.TaskOnly {
			task.Update = append(reset, Rounds.Overwrite(0), Summary.Overwrite(""))
			return task, nil
		}
		req := &llm.Request{Messages: append([]llm.Message{llm.System(a.system(a.prompts.Intent))}, conversation(Messages.Get(s))...)}
		res, err := llm.GenerateJSON[intentReply](ctx, a.Model, req)
		rounds := int(res.Usage.Requests)
		switch {
		case err == nil && res.Value.Intent == chatIntent && strings.TrimSpace(res.Value.Reply) != "":
			reply := res.Value.Reply
			emit(ctx, Event{Kind: EventDelivered, Text: reply})
			return graph.Command{
				Goto: []graph.Target{graph.To(graph.END)},
				Update: append(reset, Rounds.Overwrite(rounds), Summary.Overwrite(reply),
					graph.Append(Messages, llm.Assistant(reply))),
			}, nil
		case errors.Is(err, llm.ErrContract):
			a.log.WarnContext(ctx, "planexec: the intent check gave no usable reply; treating the input as a task", slog.Any("error", err))
		case err != nil:
			return nil, fmt.Errorf("planexec: the intent check failed: %w", err)
		}
		task.Update = append(reset, Rounds.Overwrite(rounds), Summary.Overwrite(""))
		return task, nil
	}
}

// conversation is the history as the planner and the intent check see
// it: the user's messages and the agent's answers, without tool traffic.
func conversation(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == llm.RoleUser || (m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 && m.Text() != "") {
			out = append(out, m)
		}
	}
	return out
}

// asks counts the questions the planner asked for the current task.
func asks(history []llm.Message) int {
	n := 0
	for _, m := range history {
		if _, ok := askCall(m); ok && m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

// planNode makes the plan: a quick assessment (which may ask a person
// instead), then, for a complex task, a deeper planning call.
func (a *agent) planNode(ctx context.Context, s graph.State) (graph.Output, error) {
	history := PlanMessages.Get(s)
	asked := asks(history)
	canAsk := a.AskMode && asked < a.MaxAsks
	req := a.planRequest(s, history)
	if a.AskMode || asked > 0 {
		req.Tools = []llm.ToolSpec{a.ask.Info().Spec()}
		if !canAsk {
			// The ask tool stays described (the history holds its calls)
			// but may not be called.
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
			req.Messages = append(req.Messages, llm.User(fmt.Sprintf(
				"You have asked %d questions, the most allowed. Do not ask more: reply with the plan JSON now, assuming what you must.", asked)))
		}
	}
	r, err := callContract(ctx, a.Model, req, func(d draft) []string { return d.plan().problems() }, canAsk)
	rounds := r.requests
	if err != nil {
		return nil, fmt.Errorf("planexec: planning failed: %w", err)
	}
	if r.ask != nil {
		return graph.Command{
			Goto:   []graph.Target{graph.To(AskNode)},
			Update: graph.Writes(graph.Append(PlanMessages, r.msg), Rounds.Set(rounds)),
		}, nil
	}
	plan, reply := r.value.plan(), r.msg
	if r.value.Complexity == complexTask {
		deep := req.Clone()
		deep.Messages = append(deep.Messages, r.msg, llm.User(a.prompts.DeepPlan+"\nReply with only the JSON object (task, steps, replan)."))
		if len(deep.Tools) > 0 {
			deep.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
		}
		deep.Reasoning = &llm.Reasoning{Enabled: true}
		d, err := callContract(ctx, a.Model, deep, Plan.problems, false)
		rounds += d.requests
		switch {
		case err == nil:
			plan, reply = d.value, d.msg
		case errors.Is(err, llm.ErrContract):
			a.log.WarnContext(ctx, "planexec: deeper planning gave no usable plan; keeping the first one", slog.Any("error", err))
		default:
			return nil, fmt.Errorf("planexec: deeper planning failed: %w", err)
		}
	}
	emit(ctx, Event{Kind: EventPlanReady, Plan: &plan})
	next := DispatchNode
	if a.ConfirmPlan && !a.nested(ctx) {
		next = ReviewNode
	}
	return graph.Command{
		Goto:   []graph.Target{graph.To(next)},
		Update: graph.Writes(graph.Append(PlanMessages, reply), CurrentPlan.Set(plan), Rounds.Set(rounds)),
	}, nil
}

// planRequest is the quick assessment's request: the instructions, the
// conversation and the planning dialogue so far.
func (a *agent) planRequest(s graph.State, history []llm.Message) *llm.Request {
	var sys strings.Builder
	sys.WriteString(a.prompts.Plan)
	if a.catalog != "" {
		sys.WriteString("\n\nThe tools the steps can use:\n")
		sys.WriteString(a.catalog)
	}
	if a.AskMode {
		fmt.Fprintf(&sys, "\nIf you need information only the user can give, call %s instead of planning (at most %d questions in all).", AskToolName, a.MaxAsks)
	}
	sys.WriteString("\nReply with only a JSON object of this shape:\n")
	sys.WriteString(planShape)
	msgs := []llm.Message{llm.System(a.system(sys.String()))}
	msgs = append(msgs, conversation(Messages.Get(s))...)
	msgs = append(msgs, history...)
	return &llm.Request{Messages: msgs}
}

// askNode puts the planner's question to a person and adds the answer to
// the planning dialogue. A question that cannot be asked goes back to the
// planner as a tool error.
func (a *agent) askNode(ctx context.Context, s graph.State) (graph.Output, error) {
	history := PlanMessages.Get(s)
	var call llm.ToolCall
	found := false
	if n := len(history); n > 0 {
		call, found = askCall(history[n-1])
	}
	if !found {
		return nil, fmt.Errorf("planexec: the ask node found no question at the end of the planning dialogue (key %q); it runs only after the planner calls %s", PlanMessages.Name(), AskToolName)
	}
	q, probs := parseAsk(call.Arguments)
	if len(probs) > 0 {
		msg := llm.ToolError(call, "The question could not be asked: "+strings.Join(probs, "; ")+". Fix the question, or give the plan.")
		return graph.Writes(graph.Append(PlanMessages, msg)), nil
	}
	text, err := askPerson(ctx, q)
	if err != nil {
		emitWaiting(ctx, "", err)
		return nil, err
	}
	return graph.Writes(graph.Append(PlanMessages, llm.ToolResult(call, "The user answered: "+text))), nil
}
