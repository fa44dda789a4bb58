package router

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// Agent is a sub-agent: a compiled graph the router model calls like a
// tool, with a task.
type Agent struct {
	// Name is the tool name the model calls the agent by, and the name of
	// the node its calls run in.
	Name string
	// Description tells the router model what the agent is for; the model
	// chooses agents by it.
	Description string
	// Graph is the agent. Each call runs it as a nested run in its own
	// namespace of the router's thread (see the package documentation).
	Graph *graph.Graph
	// Input makes the nested run's input from the task (nil:
	// react.Input(task)).
	Input func(task string) graph.Update
	// Output reads the agent's answer from the nested run's final state
	// (nil: react.Answer; no answer is an error). An error becomes a tool
	// error message for the router model.
	Output func(s graph.State) (string, error)
	// Remote, instead of Graph, is an agent on another server (see
	// Remote); Input and Output are not used for it.
	Remote Remote
}

type taskArgs struct {
	Task string `json:"task" jsonschema:"the task for the agent, with everything it needs to know: it does not see this conversation"`
}

// tool returns the tool the router model calls the agent through. It is a
// read tool: the agent's own tools ask for approval where they must.
func (ag Agent) tool() (tool.Tool, error) {
	if ag.Remote != nil {
		return ag.remoteTool()
	}
	input, output := ag.Input, ag.Output
	if input == nil {
		input = react.Input
	}
	if output == nil {
		output = reactAnswer
	}
	g, name := ag.Graph, ag.Name
	return tool.Func(name, ag.Description, func(ctx context.Context, a taskArgs) (string, error) {
		if strings.TrimSpace(a.Task) == "" {
			return "", tool.BadArguments(name, `"task" is empty; describe the task for the agent`)
		}
		// Inside the call's task this is a nested run: it finds the task
		// in ctx, checkpoints in its namespace and, when the thread is
		// resumed, continues where it stopped instead of starting over.
		res, err := g.Invoke(ctx, input(a.Task))
		if err != nil {
			return "", err // an interrupt stops the router's run too (tool.Node passes it on)
		}
		return output(res.State)
	}, tool.ReadOnly())
}

// reactAnswer is the default Agent.Output.
func reactAnswer(s graph.State) (answer string, err error) {
	defer func() {
		if v := recover(); v != nil { // the graph has no react.Messages key
			err = fmt.Errorf("the agent's state cannot be read with react.Answer (%v); set Agent.Output", v)
		}
	}()
	answer, ok := react.Answer(s)
	if !ok {
		return "", errors.New("the agent finished without an answer")
	}
	return answer, nil
}
