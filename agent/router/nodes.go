package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// entry starts a turn: it clears the last turn's outcome and verdicts,
// starts the clock, and takes a direct route when the request names an
// agent (the route is recorded as an assistant call of the agent, which
// the fan-out after entry sends to the agent's node).
func (r *router) entry(ctx context.Context, s graph.State) (graph.Output, error) {
	var t turn
	if deadline, fresh := r.clock(ctx, t); fresh {
		t.Run, t.Deadline = runMark(ctx), deadline
	}
	ws := graph.Writes(Outcomes.Set(Outcome{}), verdictsKey.Overwrite(nil))
	if call, ok := r.directCall(r.msgs.Get(s)); ok {
		t.Direct = call.ID
		ws = append(ws, graph.Append(r.msgs, llm.Assistant("", call)))
	}
	return append(ws, turnKey.Set(t)), nil
}

// directCall returns the call of a direct route, when the history ends
// with a request that names one of the agents.
func (r *router) directCall(msgs []llm.Message) (llm.ToolCall, bool) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.RoleUser {
		return llm.ToolCall{}, false
	}
	name, task, ok := r.direct(msgs[len(msgs)-1].Text())
	if !ok || !r.agents[name] {
		return llm.ToolCall{}, false
	}
	args, err := json.Marshal(taskArgs{Task: task})
	if err != nil {
		return llm.ToolCall{}, false // a string always encodes
	}
	return llm.ToolCall{ID: llm.NewCallID(), Name: name, Arguments: string(args)}, true
}

// decide is the router node. After a round of calls it ends the turn when
// a call's verdict says so, or when the deadline has passed; otherwise it
// asks the model, whose reply either calls tools (the fan-out after this
// node sends them) or is the answer.
func (r *router) decide(ctx context.Context, s graph.State) (graph.Output, error) {
	msgs := r.msgs.Get(s)
	t := turnKey.Get(s)
	var ws graph.Update
	deadline, fresh := r.clock(ctx, t)
	if fresh {
		t.Run, t.Deadline = runMark(ctx), deadline
		ws = append(ws, turnKey.Set(t))
	}
	if o, ok := r.judge(s, msgs); ok {
		return r.finish(ws, o), nil
	}
	if r.deadline > 0 && !time.Now().Before(deadline) {
		return r.finish(ws, r.timeUp(s, msgs)), nil
	}
	req, tail, final := r.request(ctx, msgs)
	call := &middleware.ModelCall{Request: req, Model: r.model, State: s, Tail: tail}
	resp, err := r.callModel(withDeadline(ctx, deadline), call)
	if err != nil {
		switch {
		case errors.Is(err, errTimeUp): // our deadline, not the caller's cancellation
			return r.finish(ws, r.timeUp(s, msgs)), nil
		case ctx.Err() != nil:
			return nil, err
		}
		return r.finish(ws, r.unavailable(ctx, err)), nil
	}
	msg := resp.Message
	if final && len(msg.ToolCalls) > 0 {
		msg = dropCalls(msg)
	}
	ws = append(append(ws, call.Writes()...), graph.Append(r.msgs, msg))
	if len(msg.ToolCalls) == 0 {
		ws = append(ws, Outcomes.Set(Outcome{Reason: ReasonAnswer, Answer: msg.Text()}))
	}
	return ws, nil
}

// finish ends the turn with o: its answer becomes the history's last
// message.
func (r *router) finish(ws graph.Update, o Outcome) graph.Update {
	return append(ws, graph.Append(r.msgs, llm.Assistant(o.Answer)), Outcomes.Set(o))
}

// request builds a model request: the template's options, the system
// prompt, the history with long results cut, and every tool and agent.
// When the step budget leaves no room for another round, tool use is
// turned off and the model is asked for its final answer (final) in tail,
// after the history. The history policy, if any, is middleware of the
// chain (middleware.History), which chooses the history the model sees.
func (r *router) request(ctx context.Context, msgs []llm.Message) (req *llm.Request, tail []llm.Message, final bool) {
	req = r.tmpl.Clone()
	h := tool.ForModel(msgs, r.limit)
	req.Messages = make([]llm.Message, 0, len(r.system)+len(h))
	req.Messages = append(append(req.Messages, r.system...), h...)
	req.Tools = r.specs
	// A round takes two steps: the calls, then this node again.
	if left := graph.RemainingSteps(ctx); left >= 0 && left < 2 {
		// The tools stay described: some providers refuse a history with
		// tool calls when the request defines none.
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
		tail = []llm.Message{llm.User(r.texts.render(r.texts.budget, r.data))}
		final = true
	}
	return req, tail, final
}

// dropCalls removes the calls from a reply given when no round was left,
// with a note naming them, so the run ends with this message.
func dropCalls(msg llm.Message) llm.Message {
	names := make([]string, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		names[i] = c.Name
	}
	text := msg.Text()
	if text != "" {
		text += "\n\n"
	}
	msg.ToolCalls = nil
	msg.Parts = []llm.Part{llm.Text(text + fmt.Sprintf("[The step budget ran out, so these calls were not run: %s.]", strings.Join(names, ", ")))}
	return msg
}

// route returns the fan-out after the entry and router nodes: each call of
// the last assistant message goes to its node (the agent's, or
// ToolsNode), one task per call; without calls the run goes to next.
func (r *router) route(next string) graph.FanoutFunc {
	return r.node.RouteBy(func(c llm.ToolCall) string { return r.nodeFor(c.Name) }, next)
}

// runCall runs one call (of a tool, an agent or ask_human) in its own
// task: it resolves the call's references, runs it through the chain
// (the deadline, the caller's tool hooks, approval) to the tool node, and
// adds the call's verdict when its result ends the turn.
func (r *router) runCall(ctx context.Context, s graph.State, call llm.ToolCall) (graph.Output, error) {
	t := turnKey.Get(s)
	run := call
	if call.ID != t.Direct { // a direct route's task is the user's text, not the model's
		args, err := r.resolve(s, call)
		if err != nil {
			text := fmt.Sprintf("Error: %v. The call was not run; fix the reference and call again.", err)
			return r.refuse(ctx, call, text, "bad reference: "+err.Error()), nil
		}
		run.Arguments = args
	}
	var batch []llm.ToolCall
	if msgs := r.msgs.Get(s); len(msgs) > 0 {
		batch = msgs[len(msgs)-1].ToolCalls
	}
	ran, err := r.tools.Run(ctx, s, run, batch)
	if err != nil {
		return nil, err // an interrupt (an approval, ask_human, or one inside an agent), or cancellation
	}
	u := ran.Update
	recs, _ := r.calls.In(u)
	rec := recs[call.ID]
	if run.Arguments != call.Arguments {
		// The record keeps what the model wrote, references included:
		// that is the call chain.
		rec.Arguments = call.Arguments
		for i, w := range u {
			if w.Key() == r.calls.Name() {
				u[i] = r.calls.Set(map[string]tool.Record{call.ID: rec})
			}
		}
	}
	if _, stopped := verdictsKey.In(graph.Update(ran.Result.Writes)); stopped {
		// The deadline stopped the call and gave its verdict.
	} else if v, ok := r.verdict(t, call, rec); ok {
		u = append(u, verdictsKey.Set(map[string]verdict{call.ID: v}))
	}
	return u, nil
}

// refuse answers a call the router did not run (or stopped) with a tool
// error message, and records it.
func (r *router) refuse(ctx context.Context, call llm.ToolCall, text, problem string) graph.Update {
	return r.node.Refuse(ctx, call, text, problem)
}
