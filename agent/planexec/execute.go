package planexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/template"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// stepTask is the payload of one step's task.
type stepTask struct {
	ID string `json:"id"`
	// Rounds is the step's share of the round budget (at most
	// StepRounds): its loop's model requests are bounded by it.
	Rounds int `json:"rounds"`
	// Tokens is the step's share of the token budget (0: none).
	Tokens int `json:"tokens,omitempty"`
	// Attempt numbers the retries of a step that missed its done_when.
	Attempt int `json:"attempt,omitempty"`
}

// stepFrom returns the ID of the step whose loop is running, or "". The
// step's meter carries it, so a step's context holds one value.
func stepFrom(ctx context.Context) string {
	if m, ok := ctx.Value(meterKey{}).(*meter); ok {
		return m.step
	}
	return ""
}

// dispatchNode decides what happens after planning and after each level:
// it skips the dependents of failed steps, stops the run on failures
// (without ContinueOnError), sends the run to replanning after a replan
// step, delivers when the plan is done or the round budget is used up,
// and otherwise starts the next level's steps, one task each.
func (a *agent) dispatchNode(ctx context.Context, s graph.State) (graph.Output, error) {
	plan := CurrentPlan.Get(s)
	if err := a.valid.check(plan); err != nil {
		return nil, err
	}
	results := Steps.Get(s)
	skips := a.skips(ctx, plan, results)
	finished := func(id string) bool {
		_, done := results[id]
		_, skipped := skips[id]
		return done || skipped
	}
	var failed map[string]string // made when a step failed
	for id, r := range results {
		if r.Status == StepFailed && r.Budget == "" { // a budget is a limit, not an error: deliver
			if failed == nil {
				failed = map[string]string{}
			}
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
	if a.ReplanOnMiss {
		for _, r := range results {
			if r.Check != "" && !r.Replanned {
				return to(graph.To(ReplanNode))
			}
		}
	}
	wave := plan.ready(finished)
	if len(wave) == 0 {
		return to(graph.To(DeliverNode))
	}
	used, spent := Rounds.Get(s), Tokens.Get(s)
	deadline, fresh := a.deadline(ctx, s)
	if fresh {
		update = append(update, clockKey.Set(clock{Run: runMark(ctx), Deadline: deadline}))
	}
	stop := ""
	switch {
	case used >= a.RoundBudget:
		stop = BudgetRounds
	case a.TokenBudget > 0 && spent >= a.TokenBudget:
		stop = BudgetTokens
	case !deadline.IsZero() && !time.Now().Before(deadline):
		stop = BudgetTime
	}
	if stop != "" {
		a.log.WarnContext(ctx, "planexec: a budget ran out; delivering what the finished steps found", slog.String("budget", stop))
		update = append(update, Stopped.Set(stop))
		return to(graph.To(DeliverNode))
	}
	if a.MaxParallel > 0 && len(wave) > a.MaxParallel {
		wave = wave[:a.MaxParallel]
	}
	share := min(a.StepRounds, max(1, (a.RoundBudget-used)/len(wave)))
	tokens := 0
	if a.TokenBudget > 0 {
		tokens = max(1, (a.TokenBudget-spent)/len(wave))
	}
	targets := make([]graph.Target, len(wave))
	notes := retryKey.Get(s)
	for i, st := range wave {
		targets[i] = graph.Send(StepNode, stepTask{ID: st.ID, Rounds: share, Tokens: tokens, Attempt: notes[st.ID].Attempts})
		emit(ctx, Event{Kind: EventStepStarted, StepID: st.ID, Title: st.Title})
	}
	return to(targets...)
}

// skips marks the steps that cannot run because a step they depend on
// failed or was skipped, transitively (nil when none is).
func (a *agent) skips(ctx context.Context, plan Plan, results map[string]StepResult) map[string]StepResult {
	var out map[string]StepResult // made when a step is skipped
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
					if out == nil {
						out = map[string]StepResult{}
					}
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
//
// The step's budgets bound the loop: its rounds by the loop's step limit,
// its tokens and the run's time by the meter its model requests read. With
// CheckSteps, a result is checked against the step's done_when; a result
// that misses it, with retries left, is not kept: the step is noted for a
// retry, and the dispatcher runs it again (a new task, so a fresh loop)
// with the earlier result and what it missed.
func (a *agent) stepNode(ctx context.Context, s graph.State, t stepTask) (graph.Output, error) {
	var sr stepRun
	if err := a.stepStart(ctx, s, t, &sr); err != nil {
		return nil, err
	}
	if sr.cancel != nil {
		defer sr.cancel()
	}
	if a.inlineHere(ctx) {
		if out, ok, err := a.stepInline(ctx, &sr); ok {
			return out, err
		}
	}
	res, err := a.steps.Invoke(sr.ctx, sr.input, a.loopOptions(sr.rounds)...)
	out := loopOutOf(res)
	out.requests += int(sr.spent.Requests) // an inline reply that called a tool (see stepInline)
	out.tokens += tokensOf(sr.spent)
	return a.stepEnded(ctx, &sr, out, err)
}

// stepRun is what a step's loop is started with and what its end needs.
type stepRun struct {
	ctx    context.Context // the loop's: the step's meter, the run's deadline
	cancel context.CancelFunc
	plan   Plan
	st     Step
	note   retryNote
	m      *meter
	ws     graph.Update  // writes of the step's task whatever its end
	input  graph.Update  // the loop's input: the step's prompt
	msgs   []llm.Message // the prompt's message (stepInline's history)
	spent  llm.Usage     // an inline reply's usage, dropped for the loop (see stepInline)
	rounds int           // the step's share of rounds (its loop's step limit, see loopOptions)
}

// stepStart prepares a step's loop (see stepNode). It and stepEnded are
// functions of their own so that stepNode's stack frame, which is on the
// stack for the whole of the step's loop, stays small: a step's goroutine
// that outgrows its stack copies it, and the events, results and
// messages built before and after the loop took 2.7 KB of it.
//
//go:noinline
func (a *agent) stepStart(ctx context.Context, s graph.State, t stepTask, sr *stepRun) error {
	plan := CurrentPlan.Get(s)
	st, ok := plan.Step(t.ID)
	if !ok {
		return fmt.Errorf("planexec: step %q is not in the current plan (its steps are %s); the plan changed under a running step", t.ID, idList(plan.Steps))
	}
	*sr = stepRun{plan: plan, st: st, note: retryKey.Get(s)[st.ID]}
	prompt := a.stepPrompt(ctx, plan, st, Steps.Get(s), sr.note)
	f := &stepFrame{Context: ctx, m: meter{step: st.ID, tokens: int64(t.Tokens)}}
	sr.m, sr.ctx, sr.ws = &f.m, f, f.out[:0]
	if deadline, fresh := a.deadline(ctx, s); !deadline.IsZero() {
		if fresh { // a step resumed by a new run: the run's clock starts now
			sr.ws = append(sr.ws, clockKey.Set(clock{Run: runMark(ctx), Deadline: deadline}))
		}
		sr.m.deadline = deadline
		sr.ctx, sr.cancel = context.WithDeadline(sr.ctx, deadline)
	}
	sr.rounds = max(t.Rounds, 1)
	f.msg[0] = llm.User(prompt)
	f.input[0] = graph.Append(react.Messages, f.msg[:]...)
	sr.input, sr.msgs = graph.Update(f.input[:]), f.msg[:]
	return nil
}

// stepFrame is what a step's loop starts with, in one allocation: the
// loop's context, which carries the step's meter (what stepFrom and the
// budget middleware read), the loop's input (the step's prompt), and
// room for the step task's writes (its clock, result, rounds and tokens).
type stepFrame struct {
	context.Context
	m     meter
	input [1]graph.Write
	msg   [1]llm.Message
	out   [4]graph.Write
}

// Value returns the step's meter for meterKey, and the parent's values
// otherwise.
func (f *stepFrame) Value(key any) any {
	if _, ok := key.(meterKey); ok {
		return &f.m
	}
	return f.Context.Value(key)
}

// stepEnded turns what a step's loop returned into the step's writes (see
// stepNode and stepStart).
//
//go:noinline
func (a *agent) stepEnded(ctx context.Context, sr *stepRun, out loopOut, err error) (graph.Output, error) {
	sctx, plan, st, note, m, ws := sr.ctx, sr.plan, sr.st, sr.note, sr.m, sr.ws
	if errors.Is(err, graph.ErrInterrupted) {
		emitWaiting(ctx, st.ID, err)
		return nil, err
	}
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	r := StepResult{Requests: out.requests, Tokens: out.tokens, Retries: note.Attempts}
	if err != nil && !m.deadline.IsZero() && !time.Now().Before(m.deadline) {
		m.mark(BudgetTime)
	}
	r.Budget = m.budget()
	r.Undone = out.undone
	if err == nil {
		if out.answered {
			r.Status, r.Result = StepDone, out.answer
		} else {
			err = errors.New("the step's loop ended without an answer")
		}
	}
	if err == nil && a.CheckSteps && strings.TrimSpace(st.DoneWhen) != "" && r.Budget == "" {
		var use judgeUse
		v, judged := a.judge(sctx, plan, st, r.Result, &use)
		r.Requests += use.requests
		r.Tokens += use.tokens
		if judged && !v.Done {
			missing := cmpOr(strings.TrimSpace(v.Missing), "the result does not meet the step's done_when")
			if note.Attempts < a.CheckRetries {
				emit(ctx, Event{Kind: EventStepChecked, StepID: st.ID, Title: st.Title, Error: missing, Result: "retry"})
				next := retryNote{Attempts: note.Attempts + 1, Previous: r.Result, Missing: missing,
					Requests: note.Requests + r.Requests, Tokens: note.Tokens + r.Tokens}
				return append(ws, retryKey.Set(map[string]retryNote{st.ID: next}), Rounds.Set(r.Requests), Tokens.Set(r.Tokens)), nil
			}
			r.Check = missing
			emit(ctx, Event{Kind: EventStepChecked, StepID: st.ID, Title: st.Title, Error: missing})
		}
	}
	rounds, tokens := r.Requests, r.Tokens
	r.Requests += note.Requests // the earlier attempts were counted when they ended
	r.Tokens += note.Tokens
	if err != nil {
		if r.Budget == BudgetTime || errors.Is(err, ErrBudget) {
			err = fmt.Errorf("the %s budget ran out before the step finished: %w", cmpOr(r.Budget, "step's"), err)
		}
		r.Status, r.Error = StepFailed, err.Error()
		a.log.WarnContext(ctx, "planexec: a step failed", slog.String("step", st.ID), slog.String("error", r.Error))
		emit(ctx, Event{Kind: EventStepFailed, StepID: st.ID, Title: st.Title, Error: r.Error})
	} else {
		emit(ctx, Event{Kind: EventStepFinished, StepID: st.ID, Title: st.Title, Result: r.Result, Error: undoneText(r.Undone)})
	}
	return append(ws, Steps.Set(map[string]StepResult{st.ID: r}), Rounds.Set(rounds), Tokens.Set(tokens)), nil
}

// smallRounds is the largest share of rounds whose loop options New
// makes in advance (besides StepRounds itself, the usual share).
const smallRounds = 16

// makeLoopOptions makes the step loop's run options for the usual shares
// of rounds (see loopOptions).
func (a *agent) makeLoopOptions() {
	for r := 1; r <= smallRounds; r++ {
		a.limits[r] = []graph.RunOption{graph.WithStepLimit(stepLimit(r))}
	}
	a.full = []graph.RunOption{graph.WithStepLimit(stepLimit(max(a.StepRounds, 1)))}
}

// loopOptions returns the run options of a step's loop given its share of
// rounds: its step limit. The usual ones are made once, at New.
func (a *agent) loopOptions(rounds int) []graph.RunOption {
	switch {
	case rounds == max(a.StepRounds, 1) && a.full != nil:
		return a.full
	case rounds <= smallRounds && a.limits[rounds] != nil:
		return a.limits[rounds]
	}
	return []graph.RunOption{graph.WithStepLimit(stepLimit(rounds))}
}

// stepLimit is the step limit of a loop given rounds model requests: a
// model step per round, a tool step between two.
func stepLimit(rounds int) int { return 2*rounds - 1 }

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

// stepPrompt is the user message that starts a step's loop (the StepTask
// template): the task, the plan, the step, and the results of the steps it
// depends on.
//
// A step sent back to work after missing its done_when gets, after that,
// its earlier result and what the check found missing.
func (a *agent) stepPrompt(ctx context.Context, plan Plan, st Step, results map[string]StepResult, note retryNote) string {
	d := a.data()
	d.Task, d.Steps, d.Step = plan.Task, plan.Steps, st
	for _, id := range st.DependsOn {
		dep, _ := plan.Step(id)
		d.Results = append(d.Results, report(dep, results))
	}
	var text string
	if a.prompts.ownStepTask {
		text = a.render(ctx, func(t *templates) *template.Template { return t.StepTask }, d)
	} else {
		text = stepTaskText(d)
	}
	if note.Attempts > 0 {
		text += "\n\n" + retryMarker + note.Missing + "\nThe earlier attempt's result was:\n" + note.Previous +
			"\n\nDo the step again and give its whole result, including what was missing."
	}
	return text
}

// report is a step's outcome for prompt templates.
func report(st Step, results map[string]StepResult) StepReport {
	r := results[st.ID]
	return StepReport{ID: st.ID, Title: st.Title, Status: r.Status, Result: r.Result, Error: r.Error, Budget: r.Budget, Check: r.Check, Undone: r.Undone}
}

// reports are every step's outcome, in plan order.
func reports(plan Plan, results map[string]StepResult) []StepReport {
	out := make([]StepReport, len(plan.Steps))
	for i, st := range plan.Steps {
		out[i] = report(st, results)
	}
	return out
}
