package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/internal/agentgraph"
	"github.com/trellis-agents/trellis/server/runs"
	a2atool "github.com/trellis-agents/trellis/tool/a2a"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// keepRemote says whether a run's cancellation leaves its remote task
// running: only a person's cancel (or a rollback) and a timeout stop the
// remote work; a stopping server or a lost lease hands the run over.
func keepRemote(cause error) bool {
	return !errors.Is(cause, runs.ErrCancelInterrupt) && !errors.Is(cause, runs.ErrCancelRollback) && !errors.Is(cause, context.DeadlineExceeded)
}

// AgentGraph is the graph ID RegisterAgent registers the configurable
// tool-calling agent under.
const AgentGraph = config.AgentGraph

// AgentDescription describes graph AgentGraph, as its default assistant
// and the graphs list say it (for a command listing what it serves).
const AgentDescription = agentgraph.Description

// RegisterAgent connects to the MCP servers (each must start and list its
// tools, or RegisterAgent fails naming it) and registers graph "agent": a
// ReAct agent whose model (config.configurable.model, chosen as the apps'
// through m), system prompt (system_prompt) and tools (tools: built-in
// names, mcp:SERVER, mcp:SERVER/TOOL, each with an approval policy; see
// config.ToolRef) come from each assistant's config. Write tools ask for
// approval with an interrupt unless the policy says otherwise. The MCP
// connections are shared by every run and closed when the server stops.
func (s *Server) RegisterAgent(ctx context.Context, m Models, servers map[string]config.MCPServer) error {
	return s.RegisterAgentWithRemotes(ctx, m, servers, nil)
}

// RegisterAgentWithRemotes is RegisterAgent with remote agents the
// assistants may also name as tools (remote:NAME; see
// config.RemoteAgent). Their header values are read from the environment
// now; the remotes are reached only when a run calls them. A run that is
// cancelled cancels the remote task it waits on; a run left for takeover
// (the server stopping, its lease lost) leaves it running, for the new
// owner to reattach to.
func (s *Server) RegisterAgentWithRemotes(ctx context.Context, m Models, servers map[string]config.MCPServer, remotes map[string]config.RemoteAgent) error {
	var agents []*a2atool.Agent
	var graphs []*remotegraph.Agent
	for _, name := range slices.Sorted(maps.Keys(remotes)) {
		if remotes[name].LangGraph != nil {
			cfg, err := remotes[name].RemoteGraphConfig(name, nil)
			if err != nil {
				return fmt.Errorf("server: %w", err)
			}
			cfg.KeepRemoteOn = keepRemote
			g, err := remotegraph.New(cfg)
			if err != nil {
				return fmt.Errorf("server: remote_agents.%s: %w", name, err)
			}
			graphs = append(graphs, g)
			continue
		}
		cfg, err := remotes[name].A2AConfig(name, nil)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		cfg.KeepRemoteOn = keepRemote
		a, err := a2atool.New(cfg)
		if err != nil {
			return fmt.Errorf("server: remote_agents.%s: %w", name, err)
		}
		agents = append(agents, a)
	}
	tb, err := agentgraph.Connect(ctx, servers, s.log)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	for _, a := range agents {
		tb.AddRemote(a.Tool())
		tb.AddRemoteAgent(a.Name(), a.Tool().Info().Description, a)
		s.OnClose(func() error { a.Close(); return nil })
	}
	for _, g := range graphs {
		tb.AddRemote(g.Tool())
		tb.AddRemoteAgent(g.Tool().Info().Name, g.Tool().Info().Description, g)
		s.OnClose(func() error { g.Close(); return nil })
	}
	s.OnClose(tb.Close)
	s.setModels(&m)
	return s.Register(AgentGraph, runs.GraphSpec{
		Description: agentgraph.Description,
		Metadata:    map[string]any{"examples": []any{"What can you do?", "What time is it in Tokyo?", "Summarise this text in three bullet points"}},
		New:         agentgraph.New(tb, m.resolve, s.log),
		ClientTools: true,
	})
}
