package planexec

import (
	"context"
	"log/slog"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// ConversationSummary holds the running summary of the conversation the
// planner's phases (intent, plan, replan, deliver) see, when
// Config.History summarises. The step loops keep theirs in their own
// state (react.HistorySummary). Declared whatever the policy, so threads
// saved under a summarising policy still load without it.
var ConversationSummary = graph.NewKey[history.Summary]("planexec_history_summary")

// summaryBox carries the summary a node's conversation view made to the
// node's wrapper (keep), which writes it to state.
type summaryBox struct {
	set bool
	s   history.Summary
}

type summaryBoxKey struct{}

// keep wraps a node that reads the conversation through view, so the
// summary view made is written with the node's output.
func (a *agent) keep(fn graph.NodeFunc) graph.NodeFunc {
	if a.History == nil {
		return fn
	}
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		box := &summaryBox{}
		out, err := fn(context.WithValue(ctx, summaryBoxKey{}, box), s)
		if err != nil || !box.set {
			return out, err
		}
		w := ConversationSummary.Set(box.s)
		switch o := out.(type) {
		case graph.Command:
			o.Update = append(o.Update, w)
			return o, nil
		case *graph.Command:
			c := *o
			c.Update = append(c.Update, w)
			return &c, nil
		case graph.Update:
			return append(o, w), nil
		case nil:
			return graph.Writes(w), nil
		}
		return out, nil
	}
}

// view is the conversation as a planner phase's request carries it: the
// user's messages and the agent's answers (conversation), narrowed by
// Config.History. system is the phase's system prompt, which a budget
// counts. A policy that fails (a summariser that cannot be reached) is
// logged and the whole conversation is sent: a long request is better
// than a dead run.
func (a *agent) view(ctx context.Context, s graph.State, system ...llm.Message) []llm.Message {
	msgs := conversation(Messages.Get(s))
	if a.History == nil {
		return msgs
	}
	prev := ConversationSummary.Get(s)
	box, _ := ctx.Value(summaryBoxKey{}).(*summaryBox)
	if box != nil && box.set {
		prev = box.s
	}
	sel, err := a.History.Select(ctx, history.History{System: system, Messages: msgs, Summary: prev})
	if err != nil {
		if ctx.Err() == nil {
			a.log.WarnContext(ctx, "planexec: the history policy failed; sending the whole conversation", slog.Any("error", err))
		}
		return msgs
	}
	if box != nil && sel.Summary != prev {
		box.set, box.s = true, sel.Summary
	}
	return sel.Messages
}
