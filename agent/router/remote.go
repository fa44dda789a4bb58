package router

import (
	"context"
	"strings"

	"github.com/trellis-agents/trellis/tool"
)

// Remote is a sub-agent that runs on another server: an A2A agent
// (tool/a2a's Agent) or an assistant on a server speaking the LangGraph
// API (tool/remotegraph's Agent) both satisfy it. Set it as Agent.Remote
// instead of Agent.Graph.
//
// Ask is called inside the router's graph task for the call, so a remote
// that keeps its progress as durable steps (graph.Durable) and raises its
// questions as graph.Interrupt works as a nested graph does: the remote's
// question stops the router's run with that interrupt, the person's
// answer resumes the thread, and Ask, called again for the same task,
// follows the same remote task and sends the answer back down on it
// instead of starting over.
type Remote interface {
	Ask(ctx context.Context, task string) (string, error)
}

// remoteTool is the tool the router model calls a remote agent through:
// {"task": ...} in, the remote's answer out. Like a local sub-agent it is
// a read tool; the remote asks for what it needs itself.
func (ag Agent) remoteTool() (tool.Tool, error) {
	r, name := ag.Remote, ag.Name
	return tool.Func(name, ag.Description, func(ctx context.Context, a taskArgs) (string, error) {
		if strings.TrimSpace(a.Task) == "" {
			return "", tool.BadArguments(name, `"task" is empty; describe the task for the agent`)
		}
		return r.Ask(ctx, a.Task) // an interrupt stops the router's run (tool.Node passes it on)
	}, tool.ReadOnly())
}
