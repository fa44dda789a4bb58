package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

var toolParams = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask or tell the remote agent, in full: it does not see this conversation."}},"required":["message"],"additionalProperties":false}`)

// Tool returns the agent as a tool a model can call with {"message": ...}:
// its result is the remote task's text; a remote failure is a tool error
// the model sees (a *RemoteError), and the run goes on; a remote question
// interrupts the run (see Call).
func (a *Agent) Tool() tool.Tool { return &agentTool{a: a} }

type agentTool struct{ a *Agent }

func (t *agentTool) Info() tool.Info {
	d := t.a.cfg.Description
	if d == "" {
		d = "Ask the remote agent " + t.a.cfg.Name + " to do a task and return its answer."
	}
	return tool.Info{Name: t.a.cfg.Name, Description: d, Parameters: toolParams, ReadOnly: t.a.cfg.ReadOnly}
}

func (t *agentTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", tool.BadArguments(t.a.cfg.Name, "the arguments must be an object with a message string: %v", err)
	}
	if strings.TrimSpace(in.Message) == "" {
		return "", tool.BadArguments(t.a.cfg.Name, "message is empty: say what the remote agent should do")
	}
	res, err := t.a.Call(ctx, in.Message)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

// Node returns a graph node that sends the text of the last message in
// messages to the agent and appends the answer as an assistant message
// (named after the agent). A remote failure fails the node with a
// *RemoteError unless failAsMessage, which appends it as the assistant's
// message instead, so the thread goes on.
func (a *Agent) Node(messages *graph.Key[[]llm.Message], failAsMessage bool) graph.NodeFunc {
	return func(ctx context.Context, s graph.State) (graph.Output, error) {
		msgs := messages.Get(s)
		if len(msgs) == 0 {
			return nil, errors.New("a2a: node for remote agent " + a.cfg.Name + ": there is no message to send")
		}
		res, err := a.Call(ctx, msgs[len(msgs)-1].Text())
		var text string
		switch _, remote := errors.AsType[*RemoteError](err); {
		case err == nil:
			text = res.Text
		case remote && failAsMessage:
			text = err.Error()
		default:
			return nil, err
		}
		m := llm.Assistant(text)
		m.Name = a.cfg.Name
		return graph.Writes(graph.Append(messages, m)), nil
	}
}

// Ask sends task to the agent (Call) and returns the result's text, for
// callers that want text only: a router sub-agent (agent/router's Remote).
func (a *Agent) Ask(ctx context.Context, task string) (string, error) {
	res, err := a.Call(ctx, task)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}
