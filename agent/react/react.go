// Package react builds a ReAct agent: a model node and a tool node in a
// loop, returned as a compiled graph.Graph.
//
//	g, err := react.New(react.Config{
//		Model:  model,
//		System: "You are a travel assistant.",
//		Tools:  []tool.Tool{weather, bookHotel},
//	})
//	res, err := g.Invoke(ctx, react.Input("Weather in Oslo?"))
//	answer, _ := react.Answer(res.State)
//
// Each round takes two graph steps. The model node sends the system
// prompt, the history (long tool results cut by tool.ForModel) and the
// enabled tools to the model through llm.Call, so its tokens stream on the
// graph's messages stream and its usage is counted in the run's usage (Result.NodeUsage), then
// appends the reply to the history. When the reply asks for tool calls,
// the tool node (a tool.Node) runs each call as its own task, in parallel;
// write tools wait for a person's approval through a graph interrupt, and
// the results land in the history in call order. Then the model is asked
// again. A reply without tool calls ends the loop, as does a call of the
// built-in stop tool (tool.Stop) when it is among the tools.
//
// The run does not fail on its step limit (unless Config.FailOnStepLimit
// says it should): when graph.RemainingSteps leaves no room for another
// tool round and the final answer, the model is asked for its final answer
// with tool use turned off (tool choice "none", plus Config.BudgetPrompt).
// The tools stay described in that request, because some providers refuse
// a history holding tool calls when the request defines no tools. Should
// the model call tools anyway, the calls are removed from the stored reply
// and a note naming them is added to its text, so the run still ends with
// an answer.
//
// With Config.Output the loop ends with one more step that asks the model
// for the final answer as JSON (llm.GenerateJSON) and stores the decoded
// value in a typed key (see OutputTo).
//
// State lives in three keys, shared by every agent built with the default
// Config: Messages (the history), Calls (a record of every tool call) and
// ToolSubset (the tools enabled for the thread). A parent graph that lists
// the same keys shares them with the agent when it adds the agent as a
// subgraph; AddTo puts the loop into a builder of your own.
package react

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// The state keys an agent uses unless its Config names others.
var (
	// Messages is the conversation: the user's messages, the model's
	// replies and the tool results. The system prompt is never stored in
	// it, and neither are the instructions the agent adds for the final
	// answer.
	Messages = llm.NewMessagesKey("messages")
	// Calls holds a tool.Record for every finished tool call, keyed by
	// call ID (read one with tool.LookupCall).
	Calls = tool.NewRecordsKey("tool_calls")
	// ToolSubset names the tools the model is offered; empty (the default)
	// offers all of them. It is ordinary state: set it in a run's input
	// and it stays in force on the thread until it is set again (nil
	// restores all tools). Naming a tool the agent does not have fails
	// the model node with an error listing the agent's tools. The stop
	// tool, when configured, is always offered.
	ToolSubset = graph.NewKey[[]string]("tool_subset")
	// HistorySummary holds the running summary of a Config.History policy
	// that summarises (history.Summarize); it stays unset otherwise. It is
	// always among the agent's keys, so a thread keeps loading when its
	// agent's policy changes.
	HistorySummary = graph.NewKey[history.Summary]("history_summary")
)

// The node names New gives the loop (AddTo puts its prefix before them).
// Use them with llmtest.Node, graph.WithInterruptBefore or to read
// Result.Path.
const (
	ModelNode  = "model"
	ToolsNode  = "tools"
	AnswerNode = "answer" // only with Config.Output
)

// DefaultBudgetPrompt is the instruction added to the last model request
// when the step budget runs low, unless Config.BudgetPrompt replaces it.
const DefaultBudgetPrompt = "The step budget for this task is used up: no more tools can be called. " +
	"Give your final answer now, using what you have found so far, and say plainly what is still unknown or unfinished."

// Config configures an agent. Only Model is required.
type Config struct {
	// Name names the graph in errors and Mermaid output.
	Name string
	// Voice, when set, names the agent's replies (llm.Message.Name): an
	// internal participant of a larger agent, such as a reviewer whose
	// critique is the agent's working, not its answer to the person.
	Voice string
	// Model answers every request. Wrap it with llm.Retry, llm.Fallback
	// or llm.WithTimeout for resilience.
	Model llm.Model
	// System is the system prompt. It is put before the history in every
	// request and never stored in state, so changing it between turns of
	// a thread changes the agent's instructions without touching the
	// history.
	System string
	// Tools are the tools the model may call. Names must be unique.
	// Include tool.Stop() to let the model end the loop with an explicit
	// answer.
	Tools []tool.Tool
	// Policy says which calls need a person's approval; tools it does not
	// name are approved by kind (read tools run at once, write tools ask).
	// See tool.Policy. Approval needs a checkpointer and a thread
	// (graph.WithCheckpointer, graph.WithThread). The agent asks through
	// middleware.Approval(Policy), innermost in its chain; to place it
	// elsewhere, put middleware.Approval in Middleware and leave Policy
	// nil.
	Policy tool.Policy
	// MaxParallel bounds how many calls of one reply run at once, across
	// every run of the compiled graph (0: tool.DefaultMaxParallel).
	MaxParallel int
	// Request is the template of every model request: set its options
	// (Temperature, TopP, MaxTokens, Stop, Reasoning, ParallelToolCalls,
	// ToolChoice). Messages, Tools and ResponseFormat must be left empty:
	// the agent fills them.
	Request llm.Request
	// ResultLimit cuts long tool results in the requests (the zero value
	// keeps the first and last 1000 runes; see tool.Limit). State and
	// Calls keep the full results.
	ResultLimit tool.Limit
	// MaxSteps, when positive, is the compiled graph's default step limit
	// (graph.WithStepLimit given to Invoke still wins). Set it when the
	// agent runs as a subgraph, whose run has its own limit. Only New uses
	// it: with AddTo, give the limit to your own Compile.
	MaxSteps int
	// FailOnStepLimit turns the graceful finish off: the loop offers tools
	// to the end and a run that reaches its step limit fails with a
	// *graph.StepLimitError.
	FailOnStepLimit bool
	// BudgetPrompt replaces DefaultBudgetPrompt.
	BudgetPrompt string
	// Output, when set (see OutputTo), adds a final step that asks for
	// the final answer as JSON and stores it in a typed key.
	Output Output
	// OutputPrompt replaces DefaultOutputPrompt.
	OutputPrompt string
	// Messages, Calls and ToolSubset replace the package's keys of the
	// same names, for a graph that holds two agents with separate
	// histories. nil means the package's key.
	Messages   *graph.Key[[]llm.Message]
	Calls      *graph.Key[map[string]tool.Record]
	ToolSubset *graph.Key[[]string]
	// Logger receives tool failures and dropped calls (nil:
	// slog.Default()).
	Logger *slog.Logger
	// History chooses which of the thread's messages each model request
	// carries: the last turns, a token budget or a running summary (see
	// package llm/history). nil sends the whole history. It is applied
	// before every model call, after long tool results are cut; the
	// thread's state keeps every message either way. A policy that fails
	// (its summariser is down) sends the whole history, with a warning
	// to Logger (see middleware.History).
	History history.Policy
	// Summary replaces HistorySummary, the key the History policy's
	// running summary is kept in.
	Summary *graph.Key[history.Summary]
	// LeaveUndoneUnsaid turns off the grounding of final answers: by
	// default, an answer (a reply without tool calls) given after calls
	// of the same turn that did not happen — a person rejected them, or
	// they failed, and no later call of the tool succeeded (Undone) —
	// ends with a line naming each of them with the person's reason or
	// the error, so the answer cannot report them done. The line is in
	// the saved message, not in the streamed text. Set this when the
	// caller reports those calls itself (planexec's steps do).
	LeaveUndoneUnsaid bool
	// Middleware wraps the agent's model calls, tool calls and turns, in
	// the order given (the first is the outermost; see package
	// agent/middleware). The agent's own behaviours run outside it, as
	// middleware named "history" (Config.History) and "step_budget" (the
	// graceful finish), so the chain sees the messages the policy chose and
	// the final request's tool choice; those names are taken. Tools a middleware
	// provides (middleware.Toolbox) join Config.Tools, and keys it keeps
	// (middleware.Stateful) join StateKeys.
	Middleware []middleware.Middleware
}

// StateKeys returns the keys the agent reads and writes: its messages,
// calls, tool-subset and history-summary keys, and the Output's key when
// there is one. A builder given to AddTo must list all of them in
// graph.New.
func (c Config) StateKeys() []graph.AnyKey {
	k := c.keys()
	// The summary key is listed even without a History policy: a thread
	// saved under a summarising policy must still load when the policy
	// is changed or removed.
	keys := []graph.AnyKey{k.msgs, k.calls, k.subset, k.summary}
	if c.Output != nil && c.Output.stateKey() != nil {
		keys = append(keys, c.Output.stateKey())
	}
	for _, m := range c.Middleware {
		if st, ok := m.(middleware.Stateful); ok {
			keys = append(keys, st.StateKeys()...)
		}
	}
	return keys
}

type keySet struct {
	msgs    *graph.Key[[]llm.Message]
	calls   *graph.Key[map[string]tool.Record]
	subset  *graph.Key[[]string]
	summary *graph.Key[history.Summary]
}

func (c Config) keys() keySet {
	k := keySet{msgs: c.Messages, calls: c.Calls, subset: c.ToolSubset, summary: c.Summary}
	if k.summary == nil {
		k.summary = HistorySummary
	}
	if k.msgs == nil {
		k.msgs = Messages
	}
	if k.calls == nil {
		k.calls = Calls
	}
	if k.subset == nil {
		k.subset = ToolSubset
	}
	return k
}

// New returns the agent as a compiled graph: START → model, then tool
// rounds, then END (after the structured answer, with Output). Run it with
// Invoke or Stream (input: Input, or your own writes to Messages), add it
// to a parent graph with AddSubgraph, or invoke it from a node or a tool.
//
// Every problem in cfg is reported at once, in one error: a missing model,
// template fields the agent owns, tools with bad or duplicate names, policy
// rules for tools the agent does not have, a negative bound, an output key
// or type that cannot be used.
func New(cfg Config) (*graph.Graph, error) {
	a, err := build(cfg, true)
	if err != nil {
		return nil, err
	}
	b := graph.New(cfg.StateKeys()...)
	if cfg.Name != "" {
		b.SetName(cfg.Name)
	}
	a.wire(b, "", graph.END)
	b.SetEntry(ModelNode)
	var opts []graph.RunOption
	if cfg.MaxSteps > 0 {
		opts = append(opts, graph.WithStepLimit(cfg.MaxSteps))
	}
	g, err := b.Compile(opts...)
	if err != nil {
		return nil, fmt.Errorf("react: the agent's graph does not compile (check that Config.Messages, Calls, ToolSubset and the Output key have distinct names):\n%w", err)
	}
	return g, nil
}

// AddTo adds the agent's nodes to b, named prefix+ModelNode,
// prefix+ToolsNode and (with Output) prefix+AnswerNode, and returns the
// entry node: add an edge into it (b.SetEntry, or from a node of yours).
// When the loop ends the run goes to next (a node of b, or graph.END).
// b must list cfg.StateKeys(). Use AddTo to build an agent of your own
// around the loop without copying the model node; use a different prefix,
// and different keys, for each loop in one graph.
//
// cfg is checked as New checks it; on error nothing is added to b.
func AddTo(b *graph.Builder, prefix, next string, cfg Config) (entry string, err error) {
	var errs []error
	if b == nil {
		errs = append(errs, errors.New("react: AddTo was given a nil builder"))
	}
	if next == "" {
		errs = append(errs, errors.New("react: AddTo was given an empty next node; name the node to go to after the loop, or graph.END"))
	}
	a, err := build(cfg, false)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	a.wire(b, prefix, next)
	return prefix + ModelNode, nil
}

// agent is a validated Config, ready to wire.
type agent struct {
	keySet
	model        llm.Model
	system       []llm.Message // the system message, or nothing
	tmpl         llm.Request
	limit        tool.Limit
	node         *tool.Node
	specs        []llm.ToolSpec  // every tool, in Config order
	known        map[string]bool // every tool's name
	names        string          // sorted, for messages
	stop         string          // the stop tool's name, "" without one
	voice        string          // Config.Voice, put on every reply
	graceful     bool
	budgetPrompt string
	noteUndone   bool
	out          Output
	outPrompt    llm.Message
	log          *slog.Logger
	chain        *middleware.Chain
	callModel    middleware.ModelHandler
	tools        *middleware.ToolRunner
}

// build checks cfg and returns the agent, or one error listing every
// problem. forNew says whether New (rather than AddTo) is building.
func build(cfg Config, forNew bool) (*agent, error) {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("react: "+format, args...)) }
	if cfg.Model == nil {
		add("Config.Model is nil; give the agent an llm.Model")
	}
	switch {
	case cfg.MaxSteps < 0 && forNew:
		add("Config.MaxSteps is negative; use a positive step limit, or 0 for the graph's default (%d)", graph.DefaultStepLimit)
	case cfg.MaxSteps != 0 && !forNew:
		add("Config.MaxSteps is set, but AddTo does not compile the graph; pass graph.WithStepLimit to your Compile and leave MaxSteps 0")
	}
	t := cfg.Request
	if len(t.Messages) > 0 {
		add("Config.Request.Messages is set; the agent builds the messages itself (put instructions in Config.System, the user's text in the run's input)")
	}
	if len(t.Tools) > 0 {
		add("Config.Request.Tools is set; give the agent its tools in Config.Tools")
	}
	if t.ResponseFormat != nil {
		add("Config.Request.ResponseFormat is set; for a structured final answer use Config.Output (react.OutputTo)")
	}
	if cfg.Output != nil {
		if err := cfg.Output.problem(); err != nil {
			errs = append(errs, err)
		}
	}
	k := cfg.keys()
	// The agent's own behaviours are middleware of its chain, outside
	// the caller's.
	var mws []middleware.Middleware
	if cfg.History != nil {
		h, err := middleware.History(cfg.History, k.summary, middleware.HistoryLogger(cfg.Logger))
		if err != nil {
			add("Config.History: %v", err)
		} else {
			mws = append(mws, h)
		}
	}
	approval, err := middleware.ApprovalOf(cfg.Policy, cfg.Middleware)
	if err != nil {
		add("%v", err)
	}
	// The run's tool subset refuses a call before approval asks about it.
	var self *agent // set below; the gate reads the run's subset
	gate := middleware.ToolFunc("tool_subset", func(ctx context.Context, c *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
		return self.gate(ctx, c, next)
	})
	approval = append([]middleware.Middleware{gate}, approval...)
	chain, err := middleware.NewChain(append(append(mws, cfg.Middleware...), approval...)...)
	if err != nil {
		add("Config.Middleware: %v", err)
	}
	node, err := tool.NewNode(tool.NodeConfig{
		Messages:    k.msgs,
		Records:     k.calls,
		Tools:       append(slices.Clip(cfg.Tools), chain.Tools()...),
		MaxParallel: cfg.MaxParallel,
		Logger:      cfg.Logger,
	})
	if err != nil {
		errs = append(errs, err)
	}
	// The policy may name the tools middleware gives (middleware.Toolbox).
	if err := middleware.CheckPolicy(chain, append(slices.Clip(cfg.Tools), chain.Tools()...)); err != nil {
		add("Config.Policy: %v", err)
	}
	a := &agent{
		keySet:       k,
		model:        cfg.Model,
		tmpl:         t,
		limit:        cfg.ResultLimit,
		node:         node,
		known:        map[string]bool{},
		graceful:     !cfg.FailOnStepLimit,
		budgetPrompt: cmpOr(cfg.BudgetPrompt, DefaultBudgetPrompt),
		noteUndone:   !cfg.LeaveUndoneUnsaid,
		voice:        cfg.Voice,
		out:          cfg.Output,
		log:          cfg.Logger,
		chain:        chain,
	}
	self = a
	if node != nil {
		a.specs = node.Specs()
		for _, tl := range cfg.Tools {
			if tool.IsStop(tl) {
				a.stop = tl.Info().Name
			}
		}
	}
	names := make([]string, 0, len(a.specs))
	for _, s := range a.specs {
		a.known[s.Name] = true
		names = append(names, s.Name)
	}
	slices.Sort(names)
	a.names = strings.Join(names, ", ")
	if t.ToolChoice.Mode == llm.ToolChoiceTool && node != nil && !a.known[t.ToolChoice.Name] {
		add("Config.Request.ToolChoice names tool %q, which is not one of the agent's tools (%s)", t.ToolChoice.Name, a.names)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.System != "" {
		a.system = []llm.Message{llm.System(cfg.System)}
	}
	if a.out != nil {
		a.outPrompt = llm.User(cmpOr(cfg.OutputPrompt, DefaultOutputPrompt) + "\n\nJSON schema:\n" + string(a.out.schema()))
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	// The model node's chain adds the step budget's finish after the
	// history policy; the structured answer's requests go through the
	// chain without it (they forbid tools and add their own instruction).
	a.callModel = chain.WrapModel(nil)
	if a.graceful {
		turn, err := middleware.NewChain(append(slices.Clone(mws), append(append([]middleware.Middleware{stepBudget{a}}, cfg.Middleware...), approval...)...)...)
		if err != nil {
			return nil, fmt.Errorf("react: Config.Middleware: %w", err)
		}
		a.callModel = turn.WrapModel(nil)
	}
	a.tools = middleware.NewToolRunner(chain, node)
	return a, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Input returns a run input that appends a user message with text to
// Messages: g.Invoke(ctx, react.Input("...")). To choose the tools of the
// run as well, add a write: append(react.Input(text),
// react.ToolSubset.Set([]string{"search"})).
func Input(text string) graph.Update {
	return graph.Writes(graph.Append(Messages, llm.User(text)))
}

// Answer returns the final answer in s's Messages (see AnswerFrom).
func Answer(s graph.State) (string, bool) { return AnswerFrom(Messages.Get(s)) }

// AnswerFrom returns the agent's final answer in a history: the text of
// the last message when it is an assistant reply without tool calls, or
// the answer given to the built-in stop tool when the last turn called it.
// It reports false when the history does not end with an answer (the turn
// was interrupted, or has not run).
func AnswerFrom(msgs []llm.Message) (string, bool) {
	if len(msgs) == 0 {
		return "", false
	}
	last := msgs[len(msgs)-1]
	switch last.Role {
	case llm.RoleAssistant:
		if len(last.ToolCalls) == 0 {
			return last.Text(), true
		}
	case llm.RoleTool:
		return tool.Stopped(msgs)
	}
	return "", false
}
