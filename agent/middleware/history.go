package middleware

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// History returns a middleware that chooses which of the history's
// messages each request carries, with policy (see package llm/history):
// the request's leading system messages are kept and given to the policy
// as History.System, the rest are the history it selects from
// (ModelCall.Tail is not history). A summarising policy's running summary
// is read from summary in graph state (or from ModelCall.Pending, when an
// earlier call of the step wrote it) and written back, so it survives a
// crash or an interrupt. The thread's state keeps every message either
// way.
//
// A policy that fails (a summariser whose model cannot be reached) does
// not fail the call: the request goes on with its whole history, as it
// would without a policy, a warning is logged and the summary is left as
// it was, so the next call tries again. A run is not lost to an outage of
// the summariser; a history too long for the model still fails with the
// model's own error. When the call's context has ended, that error is
// returned instead.
func History(policy history.Policy, summary *graph.Key[history.Summary], opts ...HistoryOption) (Middleware, error) {
	var errs []error
	if policy == nil {
		errs = append(errs, errors.New("history: the policy is nil"))
	}
	if summary == nil {
		errs = append(errs, errors.New("history: the summary key is nil"))
	}
	if v, ok := policy.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			errs = append(errs, err) // the policy's errors name it already
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &historyMW{policy: policy, summary: summary}
	for _, o := range opts {
		if o != nil {
			o(h)
		}
	}
	return h, nil
}

// HistoryOption configures History.
type HistoryOption func(*historyMW)

// HistoryLogger sets where History warns that its policy failed (nil:
// slog.Default()).
func HistoryLogger(l *slog.Logger) HistoryOption {
	return func(h *historyMW) { h.log = l }
}

type historyMW struct {
	policy  history.Policy
	summary *graph.Key[history.Summary]
	log     *slog.Logger
}

func (h *historyMW) Name() string { return "history" }

// StateKeys returns the summary key.
func (h *historyMW) StateKeys() []graph.AnyKey { return []graph.AnyKey{h.summary} }

func (h *historyMW) WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
	msgs := call.Request.Messages
	n := 0
	for n < len(msgs) && msgs[n].Role == llm.RoleSystem {
		n++
	}
	var prev history.Summary
	if v, ok := h.summary.In(call.Pending); ok {
		prev = v
	} else if len(call.State.Keys()) > 0 { // the zero State (a call outside a graph) holds none
		prev = h.summary.Get(call.State)
	}
	sel, whole, err := SelectHistory(ctx, h.policy, history.History{System: msgs[:n:n], Messages: msgs[n:], Summary: prev}, h.log)
	if err != nil {
		return nil, err
	}
	if whole {
		return next(ctx, call)
	}
	if sel.Summary != prev {
		call.Write(h.summary.Set(sel.Summary))
	}
	req := *call.Request
	req.Messages = append(append(make([]llm.Message, 0, n+len(sel.Messages)), msgs[:n]...), sel.Messages...)
	call.Request = &req
	return next(ctx, call)
}

// SelectHistory applies policy to h the way the History middleware does,
// for code that shows a conversation to a model other than as its
// messages (a judge reading a transcript, say): when the policy fails —
// a summariser whose model is down — it logs a warning on log (the
// default logger when nil) and reports whole, and the caller uses the
// whole history, so a call is never lost to its history policy. Only an
// ended ctx is an error.
func SelectHistory(ctx context.Context, policy history.Policy, h history.History, log *slog.Logger) (sel history.Selection, whole bool, err error) {
	sel, err = policy.Select(ctx, h)
	if err == nil {
		return sel, false, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return history.Selection{}, false, fmt.Errorf("history policy: %w", cerr)
	}
	cmp.Or(log, slog.Default()).WarnContext(ctx, "history: the policy failed; sending the whole history", slog.Any("error", err))
	return history.Selection{Messages: h.Messages, Summary: h.Summary}, true, nil
}
