package agentgraph

import (
	"fmt"
	"log/slog"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/tool"
)

// AddRemoteAgent offers r, a remote agent, as the sub-agent remote:NAME
// that an assistant's configurable agents may name (see Configurable).
// Call it before serving.
func (tb *Toolbox) AddRemoteAgent(name, description string, r router.Remote) {
	if tb.agents == nil {
		tb.agents = map[string]router.Agent{}
	}
	tb.agents[name] = router.Agent{Name: name, Description: description, Remote: r}
}

// subAgents resolves an assistant's agents (remote:NAME each) into the
// router's sub-agents; errors name the reference by its index.
func (tb *Toolbox) subAgents(refs []string) ([]router.Agent, error) {
	out := make([]router.Agent, 0, len(refs))
	for i, ref := range refs {
		name, ok := config.ToolRef{Use: ref}.Remote()
		if !ok || name == "" {
			return nil, fmt.Errorf("agents[%d]: %q is not remote:NAME (a sub-agent is a remote agent under remote_agents)", i, ref)
		}
		ag, found := router.Agent{}, false
		if tb != nil {
			ag, found = tb.agents[name]
		}
		if !found {
			return nil, fmt.Errorf("agents[%d]: %q names remote agent %q, which this server does not know (see remote_agents)", i, ref, name)
		}
		out = append(out, ag)
	}
	return out, nil
}

// newRouter is the graph of an assistant with sub-agents: a router
// (agent/router) over the assistant's model, system prompt and tools,
// which may also hand a request to a remote agent.
func newRouter(model llm.Model, system string, tools []tool.Tool, policy tool.Policy, agents []router.Agent, hist history.Policy, mws []middleware.Middleware, log *slog.Logger) (*graph.Graph, error) {
	return router.New(router.Config{
		Name: AgentGraph, Model: model, System: system,
		Tools: tools, Policy: policy, Agents: agents, History: hist,
		Middleware: mws, Logger: log,
	})
}
