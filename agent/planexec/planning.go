package planexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/template"

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
			Stopped.Overwrite(""),
			retryKey.Overwrite(nil),
			approvedKey.Overwrite(Plan{}),
			feedbackKey.Overwrite(""),
		)
		task := graph.Command{Goto: []graph.Target{graph.To(next)}}
		if a.TaskOnly {
			task.Update = append(reset, Rounds.Overwrite(0), Tokens.Overwrite(0), Summary.Overwrite(""))
			return task, nil
		}
		prompt := a.render(ctx, func(t *templates) *template.Template { return t.Intent }, a.data())
		sys := llm.System(a.system(prompt))
		req := &llm.Request{Messages: append([]llm.Message{sys}, conversation(Messages.Get(s))...)}
		if schema, err := llm.SchemaFor[intentReply](); err == nil {
			req.ResponseFormat = &llm.ResponseFormat{Name: "intentReply", Schema: schema}
		}
		res, err := callContract(ctx, a.phase(a.Phases.Intent, s, len(req.Messages)), req, func(intentReply) []string { return nil }, false)
		rounds, tokens := res.requests, res.tokens
		switch {
		case err == nil && res.value.Intent == chatIntent && strings.TrimSpace(res.value.Reply) != "":
			reply := res.value.Reply
			emit(ctx, Event{Kind: EventDelivered, Text: reply})
			return graph.Command{
				Goto: []graph.Target{graph.To(graph.END)},
				Update: append(reset, Rounds.Overwrite(rounds), Tokens.Overwrite(tokens), Summary.Overwrite(reply),
					graph.Append(Messages, llm.Assistant(reply))),
			}, nil
		case errors.Is(err, llm.ErrContract):
			a.log.WarnContext(ctx, "planexec: the intent check gave no usable reply; treating the input as a task", slog.Any("error", err))
		case err != nil && ctx.Err() == nil && !errors.Is(err, graph.ErrInterrupted):
			// The routing phase degrades: a polite reply, and the thread
			// takes the next message as usual.
			a.log.ErrorContext(ctx, "planexec: the intent check's model failed; replying that the request could not be handled", slog.Any("error", err))
			d := a.data()
			d.Error = err.Error()
			reply := a.render(ctx, func(t *templates) *template.Template { return t.Unavailable }, d)
			emit(ctx, Event{Kind: EventDelivered, Text: reply})
			return graph.Command{
				Goto: []graph.Target{graph.To(graph.END)},
				Update: append(reset, Rounds.Overwrite(rounds), Tokens.Overwrite(tokens), Summary.Overwrite(reply),
					graph.Append(Messages, llm.Assistant(reply))),
			}, nil
		case err != nil:
			return nil, fmt.Errorf("planexec: the intent check failed: %w", err)
		}
		task.Update = append(reset, Rounds.Overwrite(rounds), Tokens.Overwrite(tokens), Summary.Overwrite(""))
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
// instead), then, for a complex task, a deeper planning call. While the
// planner may still ask, its requests use the Ask phase's settings; after
// that, the Plan phase's.
func (a *agent) planNode(ctx context.Context, s graph.State) (graph.Output, error) {
	history := PlanMessages.Get(s)
	asked := asks(history)
	canAsk := a.AskMode && asked < a.MaxAsks
	req, head := a.planRequest(ctx, s, history, asked)
	phase := a.Phases.Plan
	if canAsk {
		phase = a.Phases.Ask.Or(a.Phases.Plan)
	}
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
	r, err := callContract(ctx, a.phase(phase, s, head), req, func(d draft) []string { return d.plan().problems() }, canAsk)
	rounds, tokens := r.requests, r.tokens
	if errors.Is(err, llm.ErrContract) && a.OnPlanFailure != PlanFallbackFail {
		return a.planFailed(ctx, s, err, rounds, tokens)
	}
	if err != nil {
		return nil, fmt.Errorf("planexec: planning failed: %w", err)
	}
	if r.ask != nil {
		return graph.Command{
			Goto:   []graph.Target{graph.To(AskNode)},
			Update: graph.Writes(graph.Append(PlanMessages, r.msg), Rounds.Set(rounds), Tokens.Set(tokens)),
		}, nil
	}
	plan, reply := r.value.plan(), r.msg
	if r.value.Complexity == complexTask {
		d := a.data()
		d.Task = plan.Task
		deepText := a.render(ctx, func(t *templates) *template.Template { return t.DeepPlan }, d)
		deep := req.Clone()
		deep.Messages = append(deep.Messages, r.msg, llm.User(deepText+"\nReply with only the JSON object (task, steps, replan)."))
		if len(deep.Tools) > 0 {
			deep.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
		}
		deep.Reasoning = &llm.Reasoning{Enabled: true}
		d2, err := callContract(ctx, a.phase(a.Phases.Plan, s, head), deep, Plan.problems, false)
		rounds += d2.requests
		tokens += d2.tokens
		switch {
		case err == nil:
			plan, reply = d2.value, d2.msg
		case errors.Is(err, llm.ErrContract):
			a.log.WarnContext(ctx, "planexec: deeper planning gave no usable plan; keeping the first one", slog.Any("error", err))
		default:
			return nil, fmt.Errorf("planexec: deeper planning failed: %w", err)
		}
	}
	return a.planned(ctx, plan, rounds, tokens, graph.Append(PlanMessages, reply)), nil
}

// planned emits the plan and sends it to review or to the dispatcher.
func (a *agent) planned(ctx context.Context, plan Plan, rounds, tokens int, ws ...graph.Write) graph.Command {
	emit(ctx, Event{Kind: EventPlanReady, Plan: &plan})
	next := DispatchNode
	if a.ConfirmPlan && !a.nested(ctx) {
		next = ReviewNode
	}
	return graph.Command{
		Goto:   []graph.Target{graph.To(next)},
		Update: append(graph.Writes(CurrentPlan.Set(plan), Rounds.Set(rounds), Tokens.Set(tokens)), ws...),
	}
}

// helpMarker starts the planning dialogue's message holding the person's
// description of the task after planning failed (OnPlanFailure
// PlanFallbackAsk); it is asked once per task.
const helpMarker = "Planning failed, so the user was asked to describe the task. They said: "

// HelpQuestion is the question asked when planning failed and
// OnPlanFailure is PlanFallbackAsk.
const HelpQuestion = "I could not turn this request into a plan. Could you describe the task in a few steps, or say more about what you need?"

// planFailed degrades after the planner gave no usable plan: it asks the
// person once (PlanFallbackAsk), and otherwise runs the request as a
// single step.
func (a *agent) planFailed(ctx context.Context, s graph.State, cause error, rounds, tokens int) (graph.Output, error) {
	if a.OnPlanFailure == PlanFallbackAsk && !helped(PlanMessages.Get(s)) {
		a.log.WarnContext(ctx, "planexec: planning gave no usable plan; asking the user to describe the task", slog.Any("error", cause))
		return graph.Command{
			Goto:   []graph.Target{graph.To(HelpNode)},
			Update: graph.Writes(Rounds.Set(rounds), Tokens.Set(tokens)),
		}, nil
	}
	a.log.WarnContext(ctx, "planexec: planning gave no usable plan; running the request as a single step", slog.Any("error", cause))
	return a.planned(ctx, singleStep(Messages.Get(s), PlanMessages.Get(s)), rounds, tokens), nil
}

// helped reports whether the person was already asked to describe the
// task.
func helped(history []llm.Message) bool {
	for _, m := range history {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Text(), helpMarker) {
			return true
		}
	}
	return false
}

// singleStep is the fallback plan: one step doing what the user asked
// (their last request, and their description when they gave one).
func singleStep(conv, history []llm.Message) Plan {
	var request string
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == llm.RoleUser {
			request = strings.TrimSpace(conv[i].Text())
			break
		}
	}
	desc := request
	for _, m := range history {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Text(), helpMarker) {
			desc += "\n\nThe user described it further: " + strings.TrimPrefix(m.Text(), helpMarker)
		}
	}
	return Plan{
		Task:  cmpOr(request, "the user's request"),
		Steps: []Step{{ID: "task", Title: "Carry out the request", Description: desc}},
	}
}

// helpNode asks the person to describe the task after planning failed,
// and sends the answer to the planner.
func (a *agent) helpNode(ctx context.Context, _ graph.State) (graph.Output, error) {
	text, err := askPerson(ctx, Ask{Kind: AskKind, Mode: AskText, Question: HelpQuestion})
	if err != nil {
		emitWaiting(ctx, "", err)
		return nil, err
	}
	return graph.Writes(graph.Append(PlanMessages, llm.User(helpMarker+text))), nil
}

// planRequest is the quick assessment's request: the instructions, the
// conversation and the planning dialogue so far. head counts the
// instructions and the conversation (see phase).
func (a *agent) planRequest(ctx context.Context, s graph.State, history []llm.Message, asked int) (req *llm.Request, head int) {
	d := a.data()
	d.Asked = asked
	var sys strings.Builder
	sys.WriteString(a.render(ctx, func(t *templates) *template.Template { return t.Plan }, d))
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
	head = len(msgs)
	msgs = append(msgs, history...)
	return &llm.Request{Messages: msgs}, head
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
