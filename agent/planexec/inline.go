package planexec

import (
	"context"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// loopOut is what stepEnded reads of a step's loop: its model requests and
// tokens, its calls that did not happen, and its answer.
type loopOut struct {
	requests, tokens int
	undone           []CallOutcome
	answer           string
	answered         bool
}

// loopOutOf reads a loop's result (nil when the loop failed before it
// had one).
func loopOutOf(res *graph.Result) loopOut {
	if res == nil {
		return loopOut{}
	}
	out := loopOut{requests: requests(res), tokens: tokensOf(res.Usage()), undone: undone(react.Calls.Get(res.State))}
	out.answer, out.answered = react.AnswerFrom(react.Messages.Get(res.State))
	return out
}

// inlineHere reports whether a step may ask its model in its own task
// (stepInline) rather than run its loop as a nested run, because nobody
// would see the loop's run: the loop has no tools (a.turn), the run
// streams no model tokens (the step's would come from node step at the
// top level), no one receives a nested run's events but its interrupts
// (graph.NestedEvents: a client streaming subgraphs would miss the step's
// task, update and checkpoint events), the step's namespace is certainly
// empty (graph.FreshNamespace: a step resumed after a crash finds the
// reply its loop saved) and no Observer sees the model call's node and
// namespace (graph.Observing).
func (a *agent) inlineHere(ctx context.Context) bool {
	return a.turn != nil && !graph.Messages(ctx).Enabled() &&
		graph.NestedEvents(ctx)&^graph.EventInterrupt == 0 && graph.FreshNamespace(ctx) && !graph.Observing(ctx)
}

// stepInline runs a step whose loop has no tools as its one model call,
// in the step's task (Config.InlineSteps): the loop's request through the
// loop's chain (the step's budgets and react's graceful finish), with the
// step's meter and deadline, its usage recorded on the step's task as the
// nested run's would be. No nested run is started, so nothing is saved in
// the step's namespace: the step's writes (its result) are the task's, as
// after its loop.
//
// ok is false when the step must run its loop after all: the run offers
// client tools, or the model called a tool (unknown to a toolless loop,
// which would answer it with an error and ask again) with a round left.
// The reply is then dropped and its request and tokens are counted in
// the step's (sr.spent): the loop is given the rounds that are left.
func (a *agent) stepInline(ctx context.Context, sr *stepRun) (out graph.Output, ok bool, err error) {
	msg, u, ok, err := a.turn.Ask(sr.ctx, sr.msgs, stepLimit(sr.rounds))
	if !ok && err == nil {
		if u.Requests > 0 {
			sr.spent = u
			sr.rounds = max(sr.rounds-int(u.Requests), 1)
		}
		return nil, false, nil
	}
	var lo loopOut
	if err == nil {
		lo = inlineOut(&msg, u)
	}
	out, err = a.stepEnded(ctx, sr, lo, err)
	return out, true, err
}

// inlineOut is what stepEnded reads of an inline step's reply. It is out
// of line so that stepInline's frame, on the stack during the model call,
// holds no copies of the reply.
//
//go:noinline
func inlineOut(msg *llm.Message, u llm.Usage) loopOut {
	lo := loopOut{requests: max(int(u.Requests), 1), tokens: tokensOf(u)}
	lo.answer, lo.answered = react.AnswerFrom([]llm.Message{*msg})
	return lo
}
