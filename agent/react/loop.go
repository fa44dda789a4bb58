package react

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// wire adds the loop's nodes and edges to b. After the loop the run goes
// to next, through the answer node when there is an Output.
func (a *agent) wire(b *graph.Builder, prefix, next string) {
	model, tools := prefix+ModelNode, prefix+ToolsNode
	after := next
	var modelOpts []graph.NodeOption
	if a.out != nil {
		after = prefix + AnswerNode
		b.AddNode(after, a.runAnswer)
		b.AddEdge(after, next)
		// With no step left for the answer node, the model node makes
		// the structured answer itself and goes straight to next.
		modelOpts = append(modelOpts, graph.Destinations(next))
	}
	b.AddNode(model, a.modelNode(next), modelOpts...)
	graph.AddSendNode(b, tools, a.runTool)
	b.AddFanout(model, a.node.Route(tools, after), tools, after)
	if a.stop == "" {
		b.AddEdge(tools, model)
		return
	}
	b.AddConditionalEdges(tools, func(_ context.Context, s graph.State) (string, error) {
		if _, ok := tool.Stopped(a.msgs.Get(s)); ok {
			return "stop", nil
		}
		return "continue", nil
	}, map[string]string{"continue": model, "stop": after})
}

// stepsToFinish is how many steps after the model node's the loop needs to
// run one more tool round and still end cleanly: the tool node, the model
// node again, and the answer node when there is one.
func (a *agent) stepsToFinish() int {
	if a.out != nil {
		return 3
	}
	return 2
}

// modelNode returns the model node. next is where the run goes when the
// node has to make the structured answer itself.
func (a *agent) modelNode(next string) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		if text, clear, ok := a.chain.Ended(s); ok {
			// A middleware ended the run in the last tool round (a tool
			// limit with EndRun): end the turn with its message.
			msg := llm.Assistant(text)
			msg.Name = a.voice
			return graph.Update(append(clear, graph.Append(a.msgs, msg))), nil
		}
		specs, err := a.enabled(s)
		if err != nil {
			return nil, err
		}
		if specs, err = a.withClientTools(ctx, specs); err != nil {
			return nil, err
		}
		msgs, turnW, err := a.beforeTurn(ctx, s)
		if err != nil {
			return nil, err
		}
		h := tool.ForModel(msgs, a.limit)
		if a.graceful && a.out != nil && graph.RemainingSteps(ctx) == 0 {
			// No step left for the answer node: answer in structure now.
			w, msg, callW, err := a.answer(ctx, s, h, specs)
			if err != nil {
				return nil, err
			}
			if len(msg.ToolCalls) > 0 {
				msg = a.dropCalls(ctx, msg)
			}
			return graph.Command{
				Goto:   []graph.Target{graph.To(next)},
				Update: graph.Update(append(append(turnW, callW...), graph.Append(a.msgs, msg), w)),
			}, nil
		}
		call := &middleware.ModelCall{Request: a.request(ctx, h, specs), Model: a.model, State: s}
		// The voice tags the streamed tokens too, so a client can fold
		// them into the agent's working before the message lands.
		resp, err := a.callModel(llm.WithVoice(ctx, a.voice), call)
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msg.Name = a.voice
		if len(msg.ToolCalls) == 0 {
			if a.noteUndone {
				msg = a.ground(s, msg)
			}
			// afterTurn keeps msg on the heap (its hooks get its
			// address): call it only when there are hooks.
			if a.chain.HasTurnHooks() {
				if msg, turnW, err = a.afterTurn(ctx, s, msgs, msg, turnW); err != nil {
					return nil, err
				}
			}
		}
		if cw := call.Writes(); len(turnW)+len(cw) > 0 {
			return graph.Update(append(append(turnW, cw...), graph.Append(a.msgs, msg))), nil
		}
		return replyOnly(a.msgs, msg), nil
	}
}

// reply is a model node's usual update: the reply appended, nothing else.
// Its write and the message slice the write holds share one allocation.
type reply struct {
	w   [1]graph.Write
	msg [1]llm.Message
}

// replyOnly returns the update appending msg to key, made as reply.
func replyOnly(key *graph.Key[[]llm.Message], msg llm.Message) graph.Update {
	r := &reply{msg: [1]llm.Message{msg}}
	r.w[0] = graph.Append(key, r.msg[:]...)
	return graph.Update(r.w[:])
}

// stepBudget is the graceful finish as middleware of the model node's
// chain: when the run's step limit leaves no room for another tool round
// and the final answer, the request keeps its tools described (some
// providers refuse a history with tool calls when the request defines no
// tools) but forbids calling them and ends with the budget prompt; a reply
// that calls tools anyway has its calls dropped, with a note.
type stepBudget struct{ a *agent }

func (b stepBudget) Name() string { return "step_budget" }

func (b stepBudget) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	left := b.a.remaining(ctx)
	if left < 0 || left >= b.a.stepsToFinish() {
		return next(ctx, call)
	}
	return b.finish(ctx, call, next)
}

// finish is WrapModel's last step: the request without tool use, and the
// reply without calls. It is out of line so that WrapModel's frame, on the
// stack of every model call of the loop, stays small (the copies of the
// request and the reply took 1 KB of it).
//
//go:noinline
func (b stepBudget) finish(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	if len(call.Request.Tools) > 0 {
		req := *call.Request
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
		call.Request = &req
		call.Tail = append(slices.Clip(call.Tail), llm.User(b.a.budgetPrompt))
	}
	resp, err := next(ctx, call)
	if err != nil || len(resp.Message.ToolCalls) == 0 {
		return resp, err
	}
	out := *resp
	out.Message = b.a.dropCalls(ctx, resp.Message)
	return &out, nil
}

// beforeTurn runs the chain's BeforeTurn hooks when the history ends with
// a user message (a turn starts). It returns the history as the hooks
// left it and the writes to apply: the messages they replaced and their
// own writes.
func (a *agent) beforeTurn(ctx context.Context, s graph.State) ([]llm.Message, []graph.Write, error) {
	msgs := a.msgs.Get(s)
	if !a.chain.HasTurnHooks() || len(msgs) == 0 || msgs[len(msgs)-1].Role != llm.RoleUser {
		return msgs, nil, nil
	}
	t := &middleware.Turn{State: s, Messages: slices.Clone(msgs)}
	if err := a.chain.BeforeTurn(ctx, t); err != nil {
		return nil, nil, err
	}
	var w []graph.Write
	if r := t.Replaced(); len(r) > 0 {
		w = append(w, graph.Append(a.msgs, r...))
	}
	return t.Messages, append(w, t.Writes()...), nil
}

// afterTurn runs the chain's AfterTurn hooks on the reply that ends a
// turn, and returns the reply as they left it with their writes added.
func (a *agent) afterTurn(ctx context.Context, s graph.State, msgs []llm.Message, msg llm.Message, w []graph.Write) (llm.Message, []graph.Write, error) {
	if !a.chain.HasTurnHooks() {
		return msg, w, nil
	}
	t := &middleware.Turn{State: s, Messages: slices.Clone(msgs), Answer: &msg}
	if err := a.chain.AfterTurn(ctx, t); err != nil {
		return msg, nil, err
	}
	if r := t.Replaced(); len(r) > 0 {
		w = append(w, graph.Append(a.msgs, r...))
	}
	return *t.Answer, append(w, t.Writes()...), nil
}

// answer asks for the structured answer through the chain: no tool use,
// and the output instruction after the history. It returns the write
// storing the answer, the reply and the chain's writes.
func (a *agent) answer(ctx context.Context, s graph.State, h []llm.Message, specs []llm.ToolSpec) (graph.Write, llm.Message, []graph.Write, error) {
	req := a.request(ctx, h, specs)
	if len(specs) > 0 {
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
	}
	call := &middleware.ModelCall{Request: req, Model: a.model, State: s, Tail: []llm.Message{a.outPrompt}}
	var w graph.Write
	resp, err := a.chain.WrapModel(func(ctx context.Context, c *middleware.ModelCall) (*llm.Response, error) {
		out, msg, err := a.out.generate(ctx, c.Model, c.Final())
		if err != nil {
			return nil, err
		}
		w = out
		return &llm.Response{Message: msg, FinishReason: llm.FinishStop}, nil
	})(ctx, call)
	if err != nil {
		return graph.Write{}, llm.Message{}, nil, err
	}
	return w, resp.Message, call.Writes(), nil
}

// request builds a model request: the template's options, the system
// prompt, the client's context for this run (tool.ClientContext) as a
// system note, the history as view returned it, and the tools offered.
func (a *agent) request(ctx context.Context, h []llm.Message, specs []llm.ToolSpec) *llm.Request {
	req := a.tmpl.Clone()
	note, ok := tool.ClientContextNote(tool.ClientContext(ctx))
	n := len(a.system) + len(h)
	if ok {
		n++
	}
	req.Messages = make([]llm.Message, 0, n) // a middleware's tail goes to a copy (ModelCall.Final)
	req.Messages = append(req.Messages, a.system...)
	if ok {
		req.Messages = append(req.Messages, note)
	}
	req.Messages = append(req.Messages, h...)
	req.Tools = specs
	return req
}

// dropCalls removes the tool calls from a reply given when no tool round
// was left (a model that ignored tool choice "none"), with a note saying
// which calls did not run, so the run ends with this message.
func (a *agent) dropCalls(ctx context.Context, msg llm.Message) llm.Message {
	names := make([]string, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		names[i] = c.Name
	}
	a.log.WarnContext(ctx, "react: the model asked for tool calls after the step budget ran out; they were dropped",
		slog.String("message_id", msg.ID), slog.Any("tools", names))
	note := fmt.Sprintf("[The step budget ran out, so the tool calls this reply asked for were not run: %s.]", strings.Join(names, ", "))
	text := msg.Text()
	if text != "" {
		text += "\n\n"
	}
	msg.ToolCalls = nil
	msg.Parts = []llm.Part{llm.Text(text + note)}
	return msg
}

// enabled returns the specs of the tools the run offers: all of them, or
// those named in the subset key plus the stop tool. A subset naming a tool
// the agent does not have is an error.
func (a *agent) enabled(s graph.State) ([]llm.ToolSpec, error) {
	subset := a.subset.Get(s)
	if len(subset) == 0 {
		return a.specs, nil
	}
	want := make(map[string]bool, len(subset))
	var unknown []string
	for _, name := range subset {
		if !a.known[name] {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
		want[name] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("react: the tool subset (key %q) names %s, which the agent does not have; its tools are: %s. Name some of those, or leave the subset empty to offer them all",
			a.subset.Name(), strings.Join(unknown, ", "), a.names)
	}
	specs := make([]llm.ToolSpec, 0, len(subset)+1)
	for _, sp := range a.specs {
		if want[sp.Name] || sp.Name == a.stop {
			specs = append(specs, sp)
		}
	}
	return specs, nil
}

// withClientTools adds the run's client tools (tool.ClientTools) to the
// tools offered. A client tool named like one of the agent's own is an
// error: the model could not tell them apart.
func (a *agent) withClientTools(ctx context.Context, specs []llm.ToolSpec) ([]llm.ToolSpec, error) {
	client := tool.ClientTools(ctx)
	if len(client) == 0 {
		return specs, nil
	}
	out := slices.Clone(specs)
	for _, c := range client {
		if a.known[c.Name] {
			return nil, fmt.Errorf("react: the run's client tool %q has the name of one of the agent's own tools (%s); rename the client tool", c.Name, a.names)
		}
		out = append(out, c)
	}
	return out, nil
}

// runTool runs one call through the chain: client tools go to the
// client, the others through the middleware (approval innermost, unless
// placed) and the run's subset gate to the tool node. The call is
// recorded with the result the chain returned.
func (a *agent) runTool(ctx context.Context, s graph.State, call llm.ToolCall) (graph.Output, error) {
	if !a.known[call.Name] {
		if _, ok := tool.ClientTool(ctx, call.Name); ok {
			return a.node.AnswerClientCall(ctx, call)
		}
	}
	var batch []llm.ToolCall
	if msgs := a.msgs.Get(s); len(msgs) > 0 {
		batch = msgs[len(msgs)-1].ToolCalls
	}
	ran, err := a.tools.Run(ctx, s, call, batch)
	if err != nil {
		return nil, err // an interrupt (an approval waiting), or cancellation
	}
	return ran.Update, nil
}

// gate is the innermost tool wrapper: when the run's subset leaves the
// tool out, the model gets a tool error naming the enabled tools, without
// anything run; otherwise the call goes to the tool node.
func (a *agent) gate(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	call := c.Call
	subset := a.subset.Get(c.State)
	if len(subset) > 0 && call.Name != a.stop && !slices.Contains(subset, call.Name) {
		enabled := make([]string, 0, len(subset)+1)
		for _, sp := range a.specs {
			if slices.Contains(subset, sp.Name) || sp.Name == a.stop {
				enabled = append(enabled, sp.Name)
			}
		}
		text := fmt.Sprintf("Error: the tool %q is not available in this task. The available tools are: %s. Use one of them, or answer without it.",
			call.Name, strings.Join(enabled, ", "))
		return middleware.Refuse(call, text, fmt.Sprintf("tool %q is not in the run's tool subset", call.Name)), nil
	}
	return next(ctx, c)
}

// runAnswer is the answer node: it asks for the final answer as JSON and
// stores the decoded value. The history is left as it is (see OutputTo).
func (a *agent) runAnswer(ctx context.Context, s graph.State) (graph.Output, error) {
	specs, err := a.enabled(s)
	if err != nil {
		return nil, err
	}
	if specs, err = a.withClientTools(ctx, specs); err != nil {
		return nil, err
	}
	w, _, callW, err := a.answer(ctx, s, tool.ForModel(a.msgs.Get(s), a.limit), specs)
	if err != nil {
		return nil, err
	}
	return graph.Update(append(callW, w)), nil
}
