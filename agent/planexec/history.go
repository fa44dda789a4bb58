package planexec

import (
	"context"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/history"
)

// ConversationSummary holds the running summary of the conversation the
// planner's phases (intent, plan, replan, deliver) see, when
// Config.History summarises. The step loops keep theirs in their own
// state (react.HistorySummary). Declared whatever the policy, so threads
// saved under a summarising policy still load without it.
var ConversationSummary = graph.NewKey[history.Summary]("planexec_history_summary")

// historyMiddleware is the planner phases' history policy: the History
// middleware, outermost in their chain, keeping its summary under
// ConversationSummary. Each phase's request holds its system prompt and
// the conversation; what the phase adds after the conversation (the
// planning dialogue, a report, corrections) is the call's Tail, so the
// policy selects from the conversation alone.
func (a *agent) historyMiddleware() ([]middleware.Middleware, error) {
	if a.History == nil {
		return nil, nil
	}
	h, err := middleware.History(a.History, ConversationSummary, middleware.HistoryLogger(a.log))
	if err != nil {
		return nil, err
	}
	return []middleware.Middleware{h}, nil
}

// phaseWrites gathers the state writes the chain's model hooks add to the
// phase calls of one node visit (a summary the history policy made), for
// keep to write with the node's output. The calls of a visit run one
// after another.
type phaseWrites struct{ ws graph.Update }

// add records one call's writes. Every call of a visit starts from the
// same state snapshot plus the writes so far (ModelCall.Pending), so a
// call's write to a key replaces the earlier calls' writes to it: a
// last-value key written twice in one step would fail the step.
func (p *phaseWrites) add(ws []graph.Write) {
	if len(ws) == 0 {
		return
	}
	names := make(map[string]bool, len(ws))
	for _, w := range ws {
		names[w.Key()] = true
	}
	kept := p.ws[:0:0]
	for _, w := range p.ws {
		if !names[w.Key()] {
			kept = append(kept, w)
		}
	}
	p.ws = append(kept, ws...)
}

type phaseWritesKey struct{}

// keep wraps a node whose phase calls go through the chain, so the writes
// the chain's hooks add to those calls are written with the node's output.
func (a *agent) keep(fn graph.NodeFunc) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		box := &phaseWrites{}
		out, err := fn(context.WithValue(ctx, phaseWritesKey{}, box), s)
		if err != nil || len(box.ws) == 0 {
			return out, err
		}
		w := box.ws
		switch o := out.(type) {
		case graph.Command:
			o.Update = append(o.Update, w...)
			return o, nil
		case *graph.Command:
			c := *o
			c.Update = append(c.Update, w...)
			return &c, nil
		case graph.Update:
			return append(o, w...), nil
		case nil:
			return w, nil
		}
		return out, nil
	}
}
