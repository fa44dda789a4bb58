package server

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/internal/agentgraph"
	"github.com/trellis-agents/trellis/server/runs"
)

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
	tb, err := agentgraph.Connect(ctx, servers, s.log)
	if err != nil {
		return fmt.Errorf("server: %w", err)
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
