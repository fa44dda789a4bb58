// Package agentgraph is the configurable tool-calling agent `trellis
// serve` registers as graph "agent": a ReAct loop (agent/react) whose
// model, system prompt and tools come from each assistant's
// config.configurable, with tools drawn from the tool package's built-ins
// and from the MCP servers of trellis.yaml (a Toolbox, connected once at
// start and shared by every assistant and run).
//
// It is internal because it is wiring: the reusable parts (agent/react,
// tool, tool/mcp) are public, and a Go program building its own agent
// uses those directly.
package agentgraph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/mcp"
	"github.com/trellis-agents/trellis/tool/memory"
)

// Description is the graph's description (its default assistant's).
const Description = "a tool-calling agent: model, system prompt and tools (built-in and MCP) from the assistant's config"

// Configurable is what an agent assistant reads from
// config.configurable.
type Configurable struct {
	// Model is a model name under trellis.yaml's models or a spec (""
	// : the server's default).
	Model string `json:"model"`
	// SystemPrompt is the system prompt.
	SystemPrompt string `json:"system_prompt"`
	// Tools are the tools, as in trellis.yaml.
	Tools []config.ToolRef `json:"tools"`
	// History is the message-history policy (nil: the whole thread).
	History *config.History `json:"history"`
	// Middleware is the middleware chain, built-ins by name in order.
	Middleware []config.Middleware `json:"middleware"`
	// Agents are sub-agents, remote:NAME each (remote.go): with any, the
	// assistant is a router (agent/router) that may hand a request to
	// them, instead of a ReAct loop.
	Agents []string `json:"agents"`
}

// Toolbox holds the MCP servers' connections and their tools, listed
// once when they connect.
type Toolbox struct {
	servers map[string]*server
	remote  map[string]tool.Tool    // remote agents by name (remote:NAME)
	agents  map[string]router.Agent // remote agents as sub-agents (remote.go)
	once    sync.Once
	err     error
}

type server struct {
	client *mcp.Client
	prefix string
	tools  []tool.Tool // in the server's order
}

// Connect connects to every server (in name order), lists its tools and
// returns the Toolbox; the first server that cannot be reached or listed
// fails it, with an error naming the server, and the ones already
// connected are closed.
func Connect(ctx context.Context, servers map[string]config.MCPServer, log *slog.Logger) (*Toolbox, error) {
	tb := &Toolbox{servers: map[string]*server{}}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s, err := connect(ctx, name, servers[name], log)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("mcp_servers.%s: %w", name, err), tb.Close())
		}
		tb.servers[name] = s
	}
	return tb, nil
}

func connect(ctx context.Context, name string, c config.MCPServer, log *slog.Logger) (*server, error) {
	var target mcp.Server
	if c.URL != "" {
		h := map[string][]string{}
		for k, v := range c.Headers {
			h[k] = []string{v}
		}
		target = mcp.HTTP{URL: c.URL, Headers: h}
	} else {
		env := make([]string, 0, len(c.Env))
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			env = append(env, k+"="+c.Env[k])
		}
		target = mcp.Stdio{Command: c.Command, Args: c.Args, Env: env, Dir: c.Dir}
	}
	opts := []mcp.Option{mcp.WithName(name), mcp.WithToolPrefix(c.ToolPrefix)}
	if c.Timeout > 0 {
		opts = append(opts, mcp.WithCallTimeout(c.Timeout))
	}
	client, err := mcp.Connect(ctx, target, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	tools, err := client.Tools(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("list its tools: %w", err), client.Close())
	}
	if log != nil {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Info().Name
		}
		log.Info("MCP server connected", "server", name, "tools", names)
	}
	return &server{client: client, prefix: c.ToolPrefix, tools: tools}, nil
}

// Close closes every connection (stopping stdio servers); calling it
// again does nothing.
func (tb *Toolbox) Close() error {
	if tb == nil {
		return nil
	}
	tb.once.Do(func() {
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(tb.servers)) {
			if err := tb.servers[name].client.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close MCP server %s: %w", name, err))
			}
		}
		tb.err = errors.Join(errs...)
	})
	return tb.err
}

// AddRemote offers t (a remote agent's tool) to the references
// remote:NAME, NAME being the tool's name. Call it before serving.
func (tb *Toolbox) AddRemote(t tool.Tool) {
	if tb.remote == nil {
		tb.remote = map[string]tool.Tool{}
	}
	tb.remote[t.Info().Name] = t
}

// Servers lists the connected servers' names.
func (tb *Toolbox) Servers() []string {
	if tb == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(tb.servers))
}

// Tools resolves tool references into tools and their approval policy.
// A tool named twice (mcp:s and mcp:s/t) is offered once, with the policy
// of the last reference naming it; two different tools of one name are an
// error. Errors name the reference by its index in refs.
func (tb *Toolbox) Tools(refs []config.ToolRef) ([]tool.Tool, tool.Policy, error) {
	var (
		out    []tool.Tool
		from   = map[string]int{} // tool name → index in out
		origin = map[string]string{}
		policy = tool.Policy{}
		errs   []error
	)
	add := func(i int, ref config.ToolRef, t tool.Tool, src string) {
		name := t.Info().Name
		if j, dup := from[name]; dup {
			if origin[name] != src {
				errs = append(errs, fmt.Errorf("tools[%d]: tool %q of %s has the name of a tool of %s; set tool_prefix on one of the servers", i, name, src, origin[name]))
				return
			}
			out[j] = t
		} else {
			from[name] = len(out)
			origin[name] = src
			out = append(out, t)
		}
		switch ref.Approve {
		case config.ApproveAsk:
			policy[name] = tool.RequireApproval()
		case config.ApproveAuto:
			policy[name] = tool.AutoApprove()
		default:
			delete(policy, name)
		}
	}
	for i, ref := range refs {
		if err := ref.Check(); err != nil {
			errs = append(errs, fmt.Errorf("tools[%d]: %w", i, err))
			continue
		}
		if name, ok := ref.Remote(); ok {
			var t tool.Tool
			if tb != nil {
				t = tb.remote[name]
			}
			if t == nil {
				errs = append(errs, fmt.Errorf("tools[%d]: %q names remote agent %q, which this server does not know (see remote_agents)", i, ref.Use, name))
				continue
			}
			add(i, ref, t, "remote agent "+name)
			continue
		}
		srvName, toolName, isMCP := ref.MCP()
		if !isMCP {
			switch ref.Use {
			case tool.StopName:
				add(i, ref, tool.Stop(), "the built-in tools")
			case memory.RememberName, memory.RecallName:
				for _, t := range memory.Tools(memory.Config{}) {
					if t.Info().Name == ref.Use {
						add(i, ref, t, "the built-in tools")
					}
				}
				if ref.Use == memory.RememberName && ref.Approve == config.ApproveByKind {
					// It writes only the user's own memories.
					policy[ref.Use] = tool.AutoApprove()
				}
			}
			continue
		}
		var srv *server
		if tb != nil {
			srv = tb.servers[srvName]
		}
		if srv == nil {
			errs = append(errs, fmt.Errorf("tools[%d]: %q names MCP server %q, which this server has not connected (connected: %s)", i, ref.Use, srvName, orNone(tb.Servers())))
			continue
		}
		src := "MCP server " + srvName
		found := false
		for _, t := range srv.tools {
			if toolName == "" || strings.TrimPrefix(t.Info().Name, srv.prefix) == toolName {
				add(i, ref, t, src)
				found = true
			}
		}
		if toolName != "" && !found {
			var names []string
			for _, t := range srv.tools {
				names = append(names, strings.TrimPrefix(t.Info().Name, srv.prefix))
			}
			errs = append(errs, fmt.Errorf("tools[%d]: MCP server %s has no tool %q (it has: %s)", i, srvName, toolName, orNone(names)))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return out, policy, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ModelFunc returns the model of an assistant's model field ("" : the
// server's default), or nil, nil when the server has no model for it (the
// agent then answers from a scripted model saying so).
type ModelFunc func(model string) (llm.Model, error)

// New returns the graph constructor: each assistant version gets a ReAct
// agent over its configured model, system prompt and tools. An assistant
// whose config cannot be used is a *runs.InputError at /assistant_id
// (the API answers 422), its detail naming the config field.
func New(tb *Toolbox, models ModelFunc, log *slog.Logger) runs.Constructor {
	return func(_ context.Context, a runs.Assistant) (*graph.Graph, error) {
		bad := func(format string, args ...any) error {
			return &runs.InputError{Pointer: "/assistant_id", Detail: fmt.Sprintf("assistant %s: ", a.ID) + fmt.Sprintf(format, args...)}
		}
		var c Configurable
		if err := a.Configurable(&c); err != nil {
			return nil, &runs.InputError{Pointer: "/assistant_id", Detail: err.Error()} // names the assistant
		}
		model, err := models(c.Model)
		if err != nil {
			return nil, bad("config.configurable.model: %v", err)
		}
		if model == nil {
			model = Scripted()
		}
		tools, policy, err := tb.Tools(c.Tools)
		if err != nil {
			return nil, bad("config.configurable: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		hist, err := historyPolicy(c.History, model, models)
		if err != nil {
			return nil, bad("config.configurable.%v", err)
		}
		mws, err := middlewareOf(c.Middleware, model, models)
		if err != nil {
			return nil, bad("config.configurable.%v", err)
		}
		if len(c.Agents) > 0 {
			agents, err := tb.subAgents(c.Agents)
			if err != nil {
				return nil, bad("config.configurable.%v", err)
			}
			g, err := newRouter(model, c.SystemPrompt, tools, policy, agents, hist, mws, log)
			if err != nil {
				return nil, bad("config.configurable: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			return g, nil
		}
		return react.New(react.Config{
			Name: AgentGraph, Model: model, System: c.SystemPrompt,
			Tools: tools, Policy: policy, Logger: log, History: hist,
			Middleware: mws,
		})
	}
}

// historyPolicy builds the history policy of h (nil for none). The
// summariser is h.Model, or the agent's own model.
func historyPolicy(h *config.History, model llm.Model, models ModelFunc) (history.Policy, error) {
	if h == nil {
		return nil, nil
	}
	if err := h.Check(); err != nil {
		return nil, err
	}
	switch h.Policy {
	case config.HistoryLastTurns:
		return history.LastTurns{N: h.Turns}, nil
	case config.HistoryTokenBudget:
		return history.Budget{Max: h.MaxTokens}, nil
	case config.HistorySummarize:
		sm := model
		if h.Model != "" {
			m, err := models(h.Model)
			if err != nil {
				return nil, fmt.Errorf("history.model: %v", err)
			}
			if m != nil {
				sm = m
			}
		}
		return history.Summarize{Model: sm, Prompt: h.Prompt, KeepTurns: h.Turns, MaxTurns: h.MaxTurns}, nil
	}
	return nil, nil
}

// AgentGraph is the graph ID the server registers the agent under.
const AgentGraph = config.AgentGraph

// ScriptedAnswer is what the agent answers when the server has no model.
const ScriptedAnswer = "(scripted) No model is configured for this server, so this agent cannot answer. " +
	"Start trellis serve with --model, OPENAI_API_KEY or ANTHROPIC_API_KEY, or name models.default in trellis.yaml."

// Scripted is the model of an agent on a server without models: it says
// so, whatever it is asked.
func Scripted() llm.Model {
	m := llmtest.New(llmtest.WithName("scripted:agent"))
	m.When(nil, llmtest.Text(ScriptedAnswer)).Repeat()
	return m
}
