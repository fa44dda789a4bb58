package planexec

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// EventKind says what an Event reports.
type EventKind string

// The event kinds, in the order a run produces them.
const (
	// EventPlanReady: a plan was made, or edited by a person (Plan).
	EventPlanReady EventKind = "plan_ready"
	// EventReplanned: the plan was revised after a replan step (Plan).
	EventReplanned EventKind = "replanned"
	// EventStepStarted: a step was scheduled to run (StepID, Title).
	EventStepStarted EventKind = "step_started"
	// EventToolCall: a step called a tool (Tool, without the result).
	EventToolCall EventKind = "tool_call"
	// EventToolResult: a tool call returned (Tool, with the result).
	EventToolResult EventKind = "tool_result"
	// EventWaiting: the run stops for a person: a question, the plan
	// review, or a tool approval (Interrupts; StepID inside a step). The
	// engine's own interrupt event follows when the run stops (inside a
	// step, after the step loop's own). A task run without a plan reports
	// its questions this way, but not its tool approvals: read those from
	// the engine's interrupt event.
	EventWaiting EventKind = "waiting"
	// EventStepFinished: a step is done (Result).
	EventStepFinished EventKind = "step_finished"
	// EventStepChecked: a step's result missed its done_when
	// (Config.CheckSteps): Error says what is missing; Result is "retry"
	// when the step is sent back to work, "" when its retries are used.
	EventStepChecked EventKind = "step_checked"
	// EventStepFailed: a step failed (Error).
	EventStepFailed EventKind = "step_failed"
	// EventStepSkipped: a step will not run because a step it depends on
	// failed or was skipped (Error says which).
	EventStepSkipped EventKind = "step_skipped"
	// EventDelivered: the final answer (Text).
	EventDelivered EventKind = "delivered"
)

// Event is what the agent sends on the run's stream as custom events
// (graph.EventCustom; read them with EventFrom), besides the engine's own
// events. Kind says which fields are set.
type Event struct {
	Kind   EventKind `json:"kind"`
	StepID string    `json:"step_id,omitempty"`
	Title  string    `json:"title,omitempty"`
	Plan   *Plan     `json:"plan,omitempty"`
	// Result is a finished step's result.
	Result string `json:"result,omitempty"`
	// Error says why a step failed or was skipped.
	Error string     `json:"error,omitempty"`
	Tool  *ToolEvent `json:"tool,omitempty"`
	// Interrupts are what the run waits for (EventWaiting): decode them
	// with AskFrom, ReviewFrom or tool.ApprovalFrom.
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
	// Text is the delivered answer.
	Text string `json:"text,omitempty"`
}

// ToolEvent describes a tool call in EventToolCall and EventToolResult.
type ToolEvent struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// EventFrom returns the agent event a stream event carries, and false for
// every other event.
func EventFrom(ev graph.Event) (Event, bool) {
	if ev.Kind != graph.EventCustom {
		return Event{}, false
	}
	e, ok := ev.Custom.(Event)
	return e, ok
}

// emit streams e when the run streams custom events. Checking first keeps
// the Event (hundreds of bytes) from being boxed for graph.Emit on every
// step and tool call of a run nobody listens to.
func emit(ctx context.Context, e Event) {
	if graph.Emitting(ctx) {
		graph.Emit(ctx, e)
	}
}

// emitWaiting reports the interrupts a nested run or a node stopped with.
func emitWaiting(ctx context.Context, step string, err error) {
	if ie, ok := errors.AsType[*graph.InterruptError](err); ok {
		emit(ctx, Event{Kind: EventWaiting, StepID: step, Interrupts: ie.Interrupts})
	}
}

// watched wraps a step's tool so that its calls and results are reported
// as events and a tool of an inactive pack refuses to run. Validator and
// Summarizer are passed through by the variants below, so approval works
// as it does for the tool itself.
type watched struct {
	inner tool.Tool
	info  tool.Info
	pack  string // "" for Config.Tools
	packs *packSet
}

func (w *watched) Info() tool.Info { return w.info }

func (w *watched) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if w.pack != "" && !w.packs.activeIn(ctx, w.pack) {
		return "", packInactiveError(w.info.Name, w.pack)
	}
	if !graph.Emitting(ctx) { // nobody listens: build no events
		return w.inner.Call(ctx, args)
	}
	id, _ := tool.CallID(ctx)
	te := ToolEvent{CallID: id, Name: w.info.Name, Arguments: args}
	step := stepFrom(ctx)
	emit(ctx, Event{Kind: EventToolCall, StepID: step, Tool: &te})
	out, err := w.inner.Call(ctx, args)
	if errors.Is(err, graph.ErrInterrupted) || ctx.Err() != nil {
		return out, err
	}
	res := te
	res.Result, res.IsError = out, err != nil
	if err != nil {
		res.Result = err.Error()
	}
	emit(ctx, Event{Kind: EventToolResult, StepID: step, Tool: &res})
	return out, err
}

type (
	watchedV  struct{ *watched }
	watchedS  struct{ *watched }
	watchedVS struct{ *watched }
)

func (w watchedV) ValidateArguments(a json.RawMessage) error {
	return w.inner.(tool.Validator).ValidateArguments(a)
}
func (w watchedVS) ValidateArguments(a json.RawMessage) error {
	return w.inner.(tool.Validator).ValidateArguments(a)
}
func (w watchedS) Summarize(a json.RawMessage) string  { return w.inner.(tool.Summarizer).Summarize(a) }
func (w watchedVS) Summarize(a json.RawMessage) string { return w.inner.(tool.Summarizer).Summarize(a) }

// watch wraps t (see watched). The built-in stop tool is left as it is:
// the loop recognises it by its type.
func watch(t tool.Tool, pack string, packs *packSet) tool.Tool {
	if tool.IsStop(t) {
		return t
	}
	w := &watched{inner: t, info: t.Info(), pack: pack, packs: packs}
	_, v := t.(tool.Validator)
	_, s := t.(tool.Summarizer)
	switch {
	case v && s:
		return watchedVS{w}
	case v:
		return watchedV{w}
	case s:
		return watchedS{w}
	}
	return w
}
