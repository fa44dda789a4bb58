package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// History returns a middleware that chooses which of the history's
// messages each request carries, with policy (see package llm/history):
// the request's leading system messages are kept and given to the policy
// as History.System, the rest are the history it selects from. A
// summarising policy's running summary is read from and written to
// summary in graph state, so it survives a crash or an interrupt. The
// thread's state keeps every message either way.
func History(policy history.Policy, summary *graph.Key[history.Summary]) (Middleware, error) {
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
	return &historyMW{policy: policy, summary: summary}, nil
}

type historyMW struct {
	policy  history.Policy
	summary *graph.Key[history.Summary]
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
	prev := h.summary.Get(call.State)
	sel, err := h.policy.Select(ctx, history.History{System: msgs[:n:n], Messages: msgs[n:], Summary: prev})
	if err != nil {
		return nil, fmt.Errorf("history policy: %w", err)
	}
	if sel.Summary != prev {
		call.Write(h.summary.Set(sel.Summary))
	}
	req := *call.Request
	req.Messages = append(append(make([]llm.Message, 0, n+len(sel.Messages)), msgs[:n]...), sel.Messages...)
	call.Request = &req
	return next(ctx, call)
}
