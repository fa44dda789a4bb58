package react

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
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
		specs, err := a.enabled(s)
		if err != nil {
			return nil, err
		}
		if specs, err = a.withClientTools(ctx, specs); err != nil {
			return nil, err
		}
		history, sumW, err := a.view(ctx, s)
		if err != nil {
			return nil, err
		}
		left := graph.RemainingSteps(ctx)
		final := a.graceful && left >= 0 && left < a.stepsToFinish()
		if final && a.out != nil && left == 0 {
			// No step left for the answer node: answer in structure now.
			w, msg, err := a.out.generate(ctx, a.model, a.answerRequest(ctx, history, specs))
			if err != nil {
				return nil, err
			}
			if len(msg.ToolCalls) > 0 {
				msg = a.dropCalls(ctx, msg)
			}
			return graph.Command{
				Goto:   []graph.Target{graph.To(next)},
				Update: graph.Writes(append(sumW, graph.Append(a.msgs, msg), w)...),
			}, nil
		}
		req := a.request(ctx, history, specs)
		if final && len(specs) > 0 {
			// The tools stay described (some providers refuse a history
			// with tool calls when the request defines no tools), but
			// the model may not call them.
			req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
			req.Messages = append(req.Messages, llm.User(a.budgetPrompt))
		}
		// The voice tags the streamed tokens too, so a client can fold
		// them into the agent's working before the message lands.
		resp, err := llm.Call(llm.WithVoice(ctx, a.voice), a.model, req)
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msg.Name = a.voice
		if final && len(msg.ToolCalls) > 0 {
			msg = a.dropCalls(ctx, msg)
		}
		if a.noteUndone && len(msg.ToolCalls) == 0 {
			msg = a.ground(s, msg)
		}
		return graph.Writes(append(sumW, graph.Append(a.msgs, msg))...), nil
	}
}

// view returns the messages a request carries after the system prompt:
// the history with long tool results cut, chosen by the History policy,
// and the write of the policy's summary when it changed.
func (a *agent) view(ctx context.Context, s graph.State) ([]llm.Message, []graph.Write, error) {
	h := tool.ForModel(a.msgs.Get(s), a.limit)
	if a.history == nil {
		return h, nil, nil
	}
	prev := a.summary.Get(s)
	sel, err := a.history.Select(ctx, history.History{System: a.system, Messages: h, Summary: prev})
	if err != nil {
		return nil, nil, fmt.Errorf("react: history policy: %w", err)
	}
	var w []graph.Write
	if sel.Summary != prev {
		w = append(w, a.summary.Set(sel.Summary))
	}
	return sel.Messages, w, nil
}

// request builds a model request: the template's options, the system
// prompt, the client's context for this run (tool.ClientContext) as a
// system note, the history as view returned it, and the tools offered.
func (a *agent) request(ctx context.Context, h []llm.Message, specs []llm.ToolSpec) *llm.Request {
	req := a.tmpl.Clone()
	req.Messages = make([]llm.Message, 0, len(a.system)+len(h)+2)
	req.Messages = append(req.Messages, a.system...)
	if note, ok := tool.ClientContextNote(tool.ClientContext(ctx)); ok {
		req.Messages = append(req.Messages, note)
	}
	req.Messages = append(req.Messages, h...)
	req.Tools = specs
	return req
}

// answerRequest builds the request for the structured answer: no tool use,
// and the output instruction after the history.
func (a *agent) answerRequest(ctx context.Context, history []llm.Message, specs []llm.ToolSpec) *llm.Request {
	req := a.request(ctx, history, specs)
	if len(specs) > 0 {
		req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceNone}
	}
	req.Messages = append(req.Messages, a.outPrompt)
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

// runTool runs one call through the tool node, unless the run's subset
// leaves its tool out: then the model gets a tool error naming the
// enabled tools, and the call is recorded, without asking anyone or
// running anything.
func (a *agent) runTool(ctx context.Context, s graph.State, call llm.ToolCall) (graph.Output, error) {
	if !a.known[call.Name] {
		if _, ok := tool.ClientTool(ctx, call.Name); ok {
			return a.node.AnswerClientCall(ctx, call)
		}
	}
	subset := a.subset.Get(s)
	if len(subset) == 0 || call.Name == a.stop || slices.Contains(subset, call.Name) {
		return a.node.Run(ctx, s, call)
	}
	enabled := make([]string, 0, len(subset)+1)
	for _, sp := range a.specs {
		if slices.Contains(subset, sp.Name) || sp.Name == a.stop {
			enabled = append(enabled, sp.Name)
		}
	}
	text := fmt.Sprintf("Error: the tool %q is not available in this task. The available tools are: %s. Use one of them, or answer without it.",
		call.Name, strings.Join(enabled, ", "))
	return a.node.Refuse(ctx, call, text, fmt.Sprintf("tool %q is not in the run's tool subset", call.Name)), nil
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
	h, sumW, err := a.view(ctx, s)
	if err != nil {
		return nil, err
	}
	w, _, err := a.out.generate(ctx, a.model, a.answerRequest(ctx, h, specs))
	if err != nil {
		return nil, err
	}
	return graph.Writes(append(sumW, w)...), nil
}
