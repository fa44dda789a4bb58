// Package router builds a router agent: a model that answers a request by
// calling tools and sub-agents, returned as a compiled graph.Graph.
//
//	g, err := router.New(router.Config{
//		Model:    model,
//		System:   "You route data questions to the right specialist.",
//		Agents:   []router.Agent{{Name: "sql_writer", Description: "Writes SQL for a question.", Graph: sqlAgent}},
//		Tools:    []tool.Tool{findTables, runQuery},
//		Terminal: []string{"sql_writer"},
//		AskHuman: true,
//		Deadline: 2 * time.Minute,
//	})
//	res, err := g.Invoke(ctx, react.Input("Orders per day last week?"), opts...)
//	out, _ := router.Finished(res.State) // out.Answer, out.Reason, out.Failed()
//
// # The loop
//
// Each turn starts at the entry node, which may route the request straight
// to an agent (see Direct routes), and otherwise goes to the router node.
// The router node asks the model, offering every tool and agent; the
// calls of its reply run in parallel, one graph task per call (a
// tool.Node does the work, so write tools wait for a person's approval
// through interrupts, every call is recorded, and a finished call never
// runs again when the run resumes). Then the router node runs again: it
// ends the turn when a call's result says so (a terminal tool, an error
// pattern, the deadline), and asks the model again otherwise. A reply
// without tool calls is the answer. Every turn ends with an assistant
// message holding the answer at the end of the history and an Outcome
// (Finished) saying how the turn ended.
//
// # Sub-agents
//
// An Agent is any compiled graph offered to the model as a tool taking
// {"task": "..."}. A call runs the graph as a nested run (g.Invoke from
// inside the call's task): it checkpoints in its own namespace of the
// thread, its events go to the router's stream, and its interrupts (a
// write tool's approval inside it, say) stop the whole run. Resumed, in
// this process or another, the sub-agent continues where it stopped,
// without running its finished steps again. Each agent's calls run in a
// node named after the agent, so the sub-agent's namespace starts with
// "<name>:" (match its model requests with llmtest.Namespace("<name>:")).
//
// # Call-chain references
//
// A text argument of any call may contain {{call:ID}} (see Ref): before
// the tool runs, the reference is replaced with the full output of the
// earlier call with that ID, as recorded in the calls key (tool.Record).
// The model is told so in every tool's description. Outputs are copied by
// the router, not by the model, so long results are neither retyped nor
// cut (the history sent to the model cuts long results; the records do
// not). A reference that names no earlier call, the call itself, a call of
// the same reply (not finished yet), a call that failed, or that loops
// (an output that itself contains references is expanded too, so outputs
// can form a cycle) is not run: the model receives a tool error saying
// which reference is wrong and why. Records keep the arguments the model
// wrote, references included, so References(rec.Arguments) is the call
// chain.
//
// # Ending a turn
//
//   - Terminal: after a call of a tool or agent named in Config.Terminal
//     succeeds, its output is the answer (a failed call goes back to the
//     model, which may fix it). The built-in tool.Stop works as one too,
//     its answer argument being the answer.
//   - ErrorPatterns: a call whose result matches one ends the turn with an
//     error answer (Outcome.Failed reports true).
//   - Deadline: the run ends with an answer saying that time ran out, what
//     was done and what was not (status completed, no Go error).
//
// When several calls of one reply end the turn, an error wins over the
// deadline, which wins over terminal calls (whose outputs are joined in
// call order).
//
// # Direct routes
//
// When the request names an agent (by default "@name task", see Mentions
// and Config.DirectRoutes), the router model is not asked: the agent is
// called with the task and its answer is the turn's answer. The history
// records the route as an assistant call of the agent, so later turns read
// as a normal conversation.
//
// # Asking a person
//
// With Config.AskHuman the model has an ask_human tool: a call stops the
// run with an interrupt whose payload is a Question (QuestionFrom); resume
// the thread with the answer (graph.WithResume("...")) and the model gets
// it as the call's result.
//
// # The deadline
//
// Config.Deadline bounds each run (an Invoke or Stream, resumes included)
// from its first step: waiting for a person is not the agent's time, so a
// run resumed after an interrupt has the whole Deadline again. Model
// requests and calls get the deadline on their context; a call still
// running when it passes is stopped, recorded as such and reported in the
// answer. Tools should honour their context.
package router

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// The node names New gives the graph (each agent also gets a node, named
// after it). Use them with llmtest.Node or to read Result.Path.
const (
	EntryNode  = "entry"  // starts a turn; takes direct routes
	RouterNode = "router" // asks the model, or ends the turn
	ToolsNode  = "tools"  // runs calls of plain tools (and ask_human)
)

// AskHumanName is the name of the ask_human tool (Config.AskHuman).
const AskHumanName = "ask_human"

// DefaultBudgetPrompt is added to the model request when the run's step
// budget leaves no room for another tool round.
const DefaultBudgetPrompt = "The step budget for this request is used up: no more tools or agents can be called. " +
	"Give your final answer now, using what you have found so far, and say plainly what is still unknown or unfinished."

// Outcomes holds how the thread's latest turn ended; read it with
// Finished. It is reset when a turn starts.
var Outcomes = graph.NewKey[Outcome]("router_outcome")

// Config configures a router. Model is required; everything else is
// optional, though a router without agents or tools can only talk.
type Config struct {
	// Name names the graph in errors and Mermaid output.
	Name string
	// Model is the router model: it reads the conversation and calls
	// agents and tools.
	Model llm.Model
	// System is the router's system prompt, sent before the history in
	// every request and never stored in state. It is sent as written
	// (call references such as {{call:ID}} may appear in it); for a
	// template, use Prompts.System instead.
	System string
	// Settings are the routing phase's model settings: another model,
	// temperature, top-p, max tokens, reasoning effort (see llm.Settings).
	// They win over the same options in Request.
	Settings llm.Settings
	// Prompts replaces the router's own texts.
	Prompts Prompts
	// History is the routing call's message-history policy (package
	// llm/history; nil: the whole conversation): each request carries
	// only the part of the thread it selects, after long results are
	// cut. The thread keeps every message; a running summary
	// (history.Summarize) is kept in state under HistorySummary. A policy
	// that fails sends the whole conversation, with a warning to Logger
	// (see middleware.History).
	History history.Policy
	// Middleware wraps the router model's calls and its tool and agent
	// calls, in the order given (see package agent/middleware): model,
	// stream and tool hooks. A middleware with turn hooks, state keys or
	// tools is refused
	// (give it to the sub-agents, which are react agents).
	Middleware []middleware.Middleware
	// Agents are the sub-agents the model may call. Names are tool names
	// (letters, digits, '_' and '-'), unique among agents and tools, and
	// none may be a node name of the router (EntryNode, RouterNode,
	// ToolsNode).
	Agents []Agent
	// Tools are plain tools the model may call.
	Tools []tool.Tool
	// Terminal names tools and agents whose successful call ends the turn
	// with its output as the answer.
	Terminal []string
	// ErrorPatterns are regular expressions (Go syntax) matched against
	// every call's result text (tool errors included, but not the
	// router's own messages about bad references or the deadline): a
	// match ends the turn with an error answer.
	ErrorPatterns []string
	// AskHuman adds the ask_human tool (see QuestionFrom). Like approvals,
	// it needs a checkpointer and a thread.
	AskHuman bool
	// Deadline, when positive, bounds each run (see the package
	// documentation).
	Deadline time.Duration
	// Policy says which calls need a person's approval (see tool.Policy);
	// its rules may name agents and ask_human too. Agents and ask_human
	// are read tools: they run at once unless a rule names them.
	Policy tool.Policy
	// MaxParallel bounds how many calls of one reply run at once (0:
	// tool.DefaultMaxParallel).
	MaxParallel int
	// DirectRoutes picks the agent a request names, if any (nil: Mentions;
	// NoDirectRoutes turns direct routes off).
	DirectRoutes DirectRoute
	// Request is the template of every model request: set its options
	// (Temperature, MaxTokens, ...). Messages, Tools and ResponseFormat
	// must be left empty.
	Request llm.Request
	// ResultLimit cuts long results in the history sent to the model (the
	// zero value keeps the first and last 1000 runes; see tool.Limit).
	// Records keep full results, and references copy them in full.
	ResultLimit tool.Limit
	// Messages and Calls replace react.Messages and react.Calls (nil: the
	// react keys, so react.Input and tool.LookupCall(s, react.Calls, id)
	// work on a router's state).
	Messages *graph.Key[[]llm.Message]
	Calls    *graph.Key[map[string]tool.Record]
	// Logger receives tool failures (nil: slog.Default()).
	Logger *slog.Logger
}

// DirectRoute reads the text of the request (the last user message) and
// returns the agent it names and the task to give it. A name that is not
// one of the router's agents is ignored (the model takes the request).
type DirectRoute func(request string) (agent, task string, ok bool)

// Mentions is the default DirectRoute: a request of the form "@name task"
// goes to the agent name with the rest of the message as its task. A
// mention with no task after it is not a route.
func Mentions(request string) (agent, task string, ok bool) {
	s := strings.TrimSpace(request)
	if !strings.HasPrefix(s, "@") {
		return "", "", false
	}
	name, rest, _ := strings.Cut(s[1:], " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, rest = name[:i], name[i:]+" "+rest
	}
	rest = strings.TrimSpace(rest)
	if name == "" || rest == "" {
		return "", "", false
	}
	return name, rest, true
}

// NoDirectRoutes is a DirectRoute that never routes: every request goes
// to the router model.
func NoDirectRoutes(string) (agent, task string, ok bool) { return "", "", false }

// StateKeys returns the keys the router's graph holds, for a parent graph
// that adds it as a subgraph and wants to read them.
func (c Config) StateKeys() []graph.AnyKey {
	msgs, calls := c.keys()
	return []graph.AnyKey{msgs, calls, Outcomes, turnKey, verdictsKey, HistorySummary}
}

func (c Config) keys() (*graph.Key[[]llm.Message], *graph.Key[map[string]tool.Record]) {
	msgs, calls := c.Messages, c.Calls
	if msgs == nil {
		msgs = react.Messages
	}
	if calls == nil {
		calls = react.Calls
	}
	return msgs, calls
}

// HistorySummary holds the routing call's running summary when
// Config.History summarises (history.Summarize). It is declared whatever
// the policy, so a thread saved under a summarising policy still loads
// when the policy changes.
var HistorySummary = graph.NewKey[history.Summary]("router_history_summary")

// router is a validated Config.
type router struct {
	msgs     *graph.Key[[]llm.Message]
	calls    *graph.Key[map[string]tool.Record]
	model    llm.Model
	system   []llm.Message
	tmpl     llm.Request
	limit    tool.Limit
	node     *tool.Node
	specs    []llm.ToolSpec
	agents   map[string]bool // agent names; each has a node of that name
	nodes    []string        // ToolsNode, then the agents' nodes
	terminal map[string]bool
	patterns []*regexp.Regexp
	stop     string // the built-in stop tool's name, "" without one
	deadline time.Duration
	direct   DirectRoute
	texts    *texts
	// callModel asks the model through the middleware chain.
	callModel middleware.ModelHandler
	// tools runs the calls through the chain's tool wrappers (approval
	// innermost) to the tool node.
	tools *middleware.ToolRunner
	data  PromptData
	log   *slog.Logger
}

// New returns the router as a compiled graph. Run it with Invoke or
// Stream (input: react.Input, or your own writes to the messages key).
//
// Every problem in cfg is reported at once, in one error: a missing model,
// template fields the router owns, agents without a name, description or
// graph, names that are invalid, duplicated or taken by the router's
// nodes, terminal names and policy rules that match no tool or agent,
// patterns that do not compile, a negative deadline or bound.
func New(cfg Config) (*graph.Graph, error) {
	r, err := build(cfg)
	if err != nil {
		return nil, err
	}
	b := graph.New(cfg.StateKeys()...)
	if cfg.Name != "" {
		b.SetName(cfg.Name)
	}
	b.AddNode(EntryNode, r.entry)
	b.SetEntry(EntryNode)
	b.AddFanout(EntryNode, r.route(RouterNode), append(slices.Clone(r.nodes), RouterNode)...)
	b.AddNode(RouterNode, r.decide)
	b.AddFanout(RouterNode, r.route(graph.END), append(slices.Clone(r.nodes), graph.END)...)
	for _, n := range r.nodes {
		graph.AddSendNode(b, n, r.runCall)
		b.AddEdge(n, RouterNode)
	}
	g, err := b.Compile()
	if err != nil {
		return nil, fmt.Errorf("router: the graph does not compile (check that Config.Messages and Calls have distinct names):\n%w", err)
	}
	return g, nil
}

// build checks cfg and returns the router, or one error listing every
// problem.
func build(cfg Config) (*router, error) {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("router: "+format, args...)) }
	if cfg.Model == nil {
		add("Config.Model is nil; give the router an llm.Model")
	}
	if cfg.Deadline < 0 {
		add("Config.Deadline is %v; use a positive duration, or 0 for no deadline", cfg.Deadline)
	}
	if len(cfg.Request.Messages) > 0 {
		add("Config.Request.Messages is set; put instructions in Config.System and the user's text in the run's input")
	}
	if len(cfg.Request.Tools) > 0 {
		add("Config.Request.Tools is set; give the router its tools in Config.Tools and Config.Agents")
	}
	if cfg.Request.ResponseFormat != nil {
		add("Config.Request.ResponseFormat is set; the router's answers are text")
	}
	if err := cfg.Settings.Check("router: Config.Settings"); err != nil {
		errs = append(errs, err)
	}
	r := &router{
		model:    llm.WithSettings(cfg.Model, cfg.Settings),
		log:      cfg.Logger,
		tmpl:     cfg.Request,
		limit:    cfg.ResultLimit,
		agents:   map[string]bool{},
		nodes:    []string{ToolsNode},
		terminal: map[string]bool{},
		deadline: cfg.Deadline,
		direct:   cfg.DirectRoutes,
	}
	// The router's own behaviours are middleware of its chain, outside the
	// caller's.
	var own []middleware.Middleware
	if cfg.Deadline > 0 {
		own = append(own, deadline{r})
	}
	if cfg.History != nil {
		h, err := middleware.History(cfg.History, HistorySummary, middleware.HistoryLogger(cfg.Logger))
		if err != nil {
			add("Config.History: %v", err)
		} else {
			own = append(own, h)
		}
	}
	for _, m := range cfg.Middleware {
		_, bt := m.(middleware.BeforeTurner)
		_, at := m.(middleware.AfterTurner)
		_, st := m.(middleware.Stateful)
		_, tb := m.(middleware.Toolbox)
		if m != nil && (bt || at || st || tb) {
			add("Config.Middleware: %q has turn hooks, state keys or tools, which the router does not run; give it to the sub-agents (react.Config.Middleware)", m.Name())
		}
	}
	approval, err := middleware.ApprovalOf(cfg.Policy, cfg.Middleware)
	if err != nil {
		add("%v", err)
	}
	chain, err := middleware.NewChain(append(append(own, cfg.Middleware...), approval...)...)
	if err != nil {
		add("Config.Middleware: %v", err)
	} else {
		r.callModel = chain.WrapModel(nil)
	}
	r.msgs, r.calls = cfg.keys()
	if r.direct == nil {
		r.direct = Mentions
	}
	tools := slices.Clone(cfg.Tools)
	reserved := []string{EntryNode, RouterNode, ToolsNode}
	for i, ag := range cfg.Agents {
		label := fmt.Sprintf("Config.Agents[%d]", i)
		if ag.Name != "" {
			label = fmt.Sprintf("agent %q", ag.Name)
		}
		bad := false
		switch {
		case ag.Name == "":
			add("%s has no Name", label)
			bad = true
		case slices.Contains(reserved, ag.Name):
			add("%s has the name of one of the router's nodes (%s); rename the agent", label, strings.Join(reserved, ", "))
			bad = true
		}
		if strings.TrimSpace(ag.Description) == "" {
			add("%s has no Description; the router model chooses agents by their descriptions", label)
		}
		if ag.Graph == nil && ag.Remote == nil {
			add("%s has no Graph; give it a compiled graph (react.New, say) or a Remote", label)
			bad = true
		}
		if bad {
			continue
		}
		t, err := ag.tool()
		if err != nil {
			add("%s: %v", label, err)
			continue
		}
		if !r.agents[ag.Name] {
			r.nodes = append(r.nodes, ag.Name)
		}
		r.agents[ag.Name] = true
		tools = append(tools, t)
	}
	if cfg.AskHuman {
		tools = append(tools, askHumanTool())
	}
	node, err := tool.NewNode(tool.NodeConfig{
		Messages:    r.msgs,
		Records:     r.calls,
		Tools:       tools,
		MaxParallel: cfg.MaxParallel,
		Logger:      cfg.Logger,
	})
	if err != nil {
		errs = append(errs, err) // each line says "tool node: ..."; tool i is Config.Tools[i]
	}
	if err := middleware.CheckPolicy(chain, tools); err != nil {
		add("Config.Policy: %v", err)
	}
	known := map[string]bool{}
	var names []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		name := t.Info().Name
		known[name] = true
		names = append(names, name)
		if tool.IsStop(t) {
			r.stop = name
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range cfg.Terminal {
		if !known[name] {
			add("Config.Terminal names %q, which is neither a tool nor an agent of the router (%s)", name, strings.Join(names, ", "))
		}
		r.terminal[name] = true
	}
	for i, p := range cfg.ErrorPatterns {
		if p == "" {
			add("Config.ErrorPatterns[%d] is empty: it would match every result", i)
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			add("Config.ErrorPatterns[%d] (%q) does not compile: %v", i, p, err)
			continue
		}
		r.patterns = append(r.patterns, re)
	}
	r.data = PromptData{Name: cfg.Name, Tools: plainTools(cfg.Tools)}
	for _, ag := range cfg.Agents {
		r.data.Agents = append(r.data.Agents, AgentInfo{Name: ag.Name, Description: ag.Description})
	}
	texts, err := parseTexts(cfg.Prompts, r.data)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.texts = texts
	if r.log == nil {
		r.log = slog.Default()
	}
	r.node = node
	r.tools = middleware.NewToolRunner(chain, node)
	r.specs = node.Specs()
	for i := range r.specs {
		r.specs[i].Description = strings.TrimSpace(r.specs[i].Description + " " + refNote) // the model learns the syntax where it uses it
	}
	sys := cfg.System
	if r.texts.system != nil {
		sys = r.texts.render(r.texts.system, r.data)
	}
	if sys != "" {
		r.system = []llm.Message{llm.System(sys)}
	}
	return r, nil
}

// nodeFor returns the node a call of the named tool runs in.
func (r *router) nodeFor(name string) string {
	if r.agents[name] {
		return name
	}
	return ToolsNode
}
