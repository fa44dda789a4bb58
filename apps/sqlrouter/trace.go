package sqlrouter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// CallEvent is the custom event (graph.EventCustom, Event.Custom) a
// sub-agent's tool call emits when it ends: which agent called which tool,
// with which call ID, inside which task of the router. The router's call
// record (tool.Record.TaskID) names the same task, so Tree can hang each
// sub-agent call under the router's call that ran the agent: the whole
// chain per tool-call ID.
type CallEvent struct {
	// Agent is the sub-agent that made the call.
	Agent string `json:"agent"`
	// ParentTask is the router task the agent ran in (the last task of
	// the nested run's namespace); the router's record of the call that
	// ran the agent has this TaskID.
	ParentTask string `json:"parent_task"`
	// CallID and Tool are the sub-agent's call.
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments; Result its result or error text.
	Arguments string `json:"arguments"`
	Result    string `json:"result"`
	// Error says what went wrong ("" when the call succeeded).
	Error string `json:"error,omitempty"`
}

// traced wraps a sub-agent's tool so that each call emits a CallEvent. A
// tool that validates its own arguments and summarises its calls keeps
// doing so through the wrapper.
func traced(agent string, t tool.Tool) tool.Tool {
	tt := tracedTool{Tool: t, agent: agent}
	v, okV := t.(tool.Validator)
	sm, okS := t.(tool.Summarizer)
	if okV && okS {
		return tracedChecked{tracedTool: tt, v: v, sm: sm}
	}
	return tt
}

// tracedChecked is a tracedTool over a tool.Validator and tool.Summarizer.
type tracedChecked struct {
	tracedTool
	v  tool.Validator
	sm tool.Summarizer
}

func (t tracedChecked) ValidateArguments(args json.RawMessage) error {
	return t.v.ValidateArguments(args)
}

func (t tracedChecked) Summarize(args json.RawMessage) string { return t.sm.Summarize(args) }

type tracedTool struct {
	tool.Tool
	agent string
}

func (t tracedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := t.Tool.Call(ctx, args)
	ev := CallEvent{Agent: t.agent, Tool: t.Info().Name, Arguments: string(args), Result: out}
	ev.CallID, _ = tool.CallID(ctx)
	ns := graph.Namespace(ctx)
	if i := strings.LastIndexByte(ns, '|'); i >= 0 {
		ns = ns[i+1:]
	}
	if _, task, ok := strings.Cut(ns, ":"); ok {
		ev.ParentTask = task
	}
	if err != nil {
		ev.Error = err.Error()
		ev.Result = err.Error()
	}
	graph.Emit(ctx, ev)
	return out, err
}

// Tree returns the latest turn's chain (Chain) with each router call's
// Calls filled from the CallEvents of the run's events: the calls the
// agent it ran made, in the order they ended.
func Tree(s graph.State, events []graph.Event) []Link {
	chain := Chain(s)
	byTask := map[string]int{}
	for i, l := range chain {
		if l.TaskID != "" {
			byTask[l.TaskID] = i
		}
	}
	for _, ev := range events {
		ce, ok := ev.Custom.(CallEvent)
		if ev.Kind != graph.EventCustom || !ok {
			continue
		}
		i, ok := byTask[ce.ParentTask]
		if !ok {
			continue
		}
		chain[i].Calls = append(chain[i].Calls, Link{CallID: ce.CallID, Tool: ce.Tool, Agent: ce.Agent, Result: ce.Result, Failed: ce.Error != ""})
	}
	return chain
}

// RunnableAgent adapts any function to a sub-agent the router can call:
// run gets the task the router model wrote and returns the answer (an
// error goes back to the model as the call's error). Use it to offer
// another assistant, service or graph behind a function as a sub-agent
// (Config.Extra); router.Agent offers a compiled graph directly.
func RunnableAgent(name, description string, run func(ctx context.Context, task string) (string, error)) (router.Agent, error) {
	if run == nil {
		return router.Agent{}, errors.New("sqlrouter: RunnableAgent needs a run function")
	}
	b := graph.New(react.Messages)
	b.SetName(name)
	b.AddNode("run", func(ctx context.Context, s graph.State) (graph.Output, error) {
		msgs := react.Messages.Get(s)
		task := ""
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == llm.RoleUser {
				task = msgs[i].Text()
				break
			}
		}
		answer, err := run(ctx, strings.TrimSpace(task))
		if err != nil {
			return nil, err
		}
		return graph.Writes(react.Messages.Set([]llm.Message{llm.Assistant(answer)})), nil
	})
	b.SetEntry("run")
	b.AddEdge("run", graph.END)
	g, err := b.Compile()
	if err != nil {
		return router.Agent{}, fmt.Errorf("sqlrouter: RunnableAgent %s: %w", name, err)
	}
	return router.Agent{Name: name, Description: description, Graph: g}, nil
}
