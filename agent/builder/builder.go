// Package builder declares an agent as a small graph of LLM nodes joined by
// edges, some of them taken only when a condition written in plain language
// holds, and compiles it into an ordinary graph.Graph:
//
//	agent, err := builder.New("support").
//		Description("Answers customer questions, checked by a reviewer.").
//		LLMNode("chat", "You are a helpful support agent.", search).
//		LLMNode("review", "You review answers for accuracy and tone.").
//		Edge("chat", "review").
//		When("review", "the reviewer asked for changes", "chat").
//		Entry("chat").
//		End("review").
//		Build(model)
//	res, err := agent.Run(ctx, builder.Input("How do I reset my password?"))
//	fmt.Println(res.FinalMessage, res.Path, res.Success)
//
// The Builder's methods chain and never panic: a mistake is recorded and
// Build reports every mistake at once, in a *BuildError.
//
// # Nodes
//
// An LLM node is a model with a system prompt and tools. Each compiles to a
// ReAct loop (agent/react: a model node plus a tool node, in a loop until
// the model answers without calling tools), added to the agent's graph as a
// subgraph named after the node. Every node reads and writes one shared
// conversation (react.Messages) and one record of tool calls (react.Calls),
// so a node sees what the nodes before it said and what their tools
// returned. LLMNodeWith takes a full react.Config for a node that needs its
// own model, an approval policy, request options or a step budget of its
// own.
//
// # Edges
//
// After a node answers, its route node (named RouteNode(node)) picks what
// runs next:
//
//   - its conditional edges (When) are judged in the order they were
//     declared: for each, the judge model (the agent's model unless Judge
//     sets another, with the judging phase's JudgeSettings: temperature,
//     top-p, max tokens, reasoning effort) is asked whether the condition
//     holds for the conversation so far (the part History selects, when
//     set), and the first that holds is taken; conditions
//     after it are not asked about;
//   - when none holds, the node's unconditional edge (Edge, or End for the
//     end of the run) is taken;
//   - a node with neither ends the run.
//
// A node has at most one unconditional edge. Parallel(from, a, b...)
// instead runs several nodes at once after from (a fan-out), and
// Join(to, a, b...) runs to once all of them have answered; the branches
// share the conversation. Spec declares all of this as data (FromSpec),
// for agents written in a configuration file. Every judgement is stored in state (see Judgements and
// Result.Judgements) by the route node, which is a graph step of its own:
// the verdicts are checkpointed with the step, so a resumed or replayed run
// follows them without asking the judge again, and a judge that fails
// fails only its route step, which a resume runs again without re-running
// the node before it. The edge out of the route node is an ordinary
// conditional edge that reads the stored decision, and Mermaid labels it
// with the condition's text.
//
// # Iterations, limits and timeout
//
// An iteration is one visit of an LLM node: its whole model-and-tool loop
// up to its answer. MaxIterations (default DefaultMaxIterations) bounds
// the visits of one run: the agent's graph gets a step limit of two steps
// per iteration (the visit and its route), and a route node with too few
// steps left for another visit ends the run gracefully instead of
// following its edge. The run then completes with the last node's answer
// as its final message, Result.LimitReached set and Result.Success false,
// since the agent still wanted to go on. Out of iterations, the judge is
// still asked when its answer could end the run (the node's unconditional
// edge is the end, or one of its conditions leads there); a run that ends
// that way ends normally and succeeds. Like every graph step limit, the
// budget is per run: a run resumed after an interrupt gets a fresh one.
//
// Tool rounds inside one visit are bounded by that node's own react step
// budget (react.Config.MaxSteps, the graph's default when 0), where react
// asks for a final answer when the budget runs low. That is why each LLM
// node is a subgraph rather than a loop wired into the agent's graph
// (react.AddTo): react keeps back the steps its own loop needs to finish,
// not the step of the route node that follows it, so under one shared
// step limit a visit ending on the last step would fail the run instead
// of ending it gracefully.
//
// Timeout (default DefaultTimeout) bounds the whole run
// (graph.WithTimeout); a run that times out is cancelled.
//
// # Running
//
// Agent.Start returns a *Run, a handle that reports the run's status,
// iterations and tool calls while it runs and pauses, resumes or aborts it
// from any goroutine; Wait returns the *Result. Agent.Run does both. Runs
// take the graph's run options: a checkpointer and a thread make a
// conversation durable, and graph.WithResume answers an interrupt (a
// write tool's approval) on it.
//
// Run.ID is the execution ID (the graph run ID its checkpoints carry),
// Run.Started its start time, and Run.AddMessage adds a user message to
// the running execution: it joins the conversation at the next route
// node, so the judge and the next node see it.
//
// # Per-node settings and the entry at run time
//
// Describe gives a node a description (Agent.Nodes lists them), Retry
// gives it retry policies (graph.RetryPolicy: a transiently failed visit
// runs again) and NodeTimeout bounds each of its visits. Entry is the
// default entry node; a run's input may choose another with
// StartAt(node, text).
//
// Agent.Graph returns the compiled graph, to stream its events, draw it
// with Mermaid, or add it to a larger graph as a subgraph. In its streams
// the nodes' model tokens come from react.ModelNode inside the namespace
// of their LLM node ("chat:<task ID>"); the judge's JSON replies come from
// the route nodes, so a chat UI can leave them out by node name.
package builder

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
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

// Defaults for an agent that does not set its own.
const (
	DefaultMaxIterations = 50
	DefaultTimeout       = 60 * time.Second
)

// RouteNode returns the name of the graph node that routes after the LLM
// node named node: it judges the node's conditions and picks the next
// node. Judge requests come from it (llmtest.Node(builder.RouteNode("chat"))
// matches them), and Result.Graph.Path lists it after every visit.
func RouteNode(node string) string { return node + "/route" }

// Builder declares an agent. Create one with New, chain its methods, and
// call Build. Its methods record mistakes rather than panic; Build reports
// them all. A Builder is not safe for concurrent use.
type Builder struct {
	name        string
	description string
	maxIter     int
	timeout     time.Duration
	judge       llm.Model
	judgeSet    llm.Settings
	judgePrompt string
	history     history.Policy
	middleware  []middleware.Middleware
	nodes       []*nodeDecl
	byName      map[string]*nodeDecl
	defaults    map[string]string // from -> unconditional target
	conds       []condDecl
	entry       string
	extras      map[string]*nodeExtra
	parallel    map[string][]string // from -> nodes run at once
	joins       []joinDecl
	errs        []error
}

type nodeDecl struct {
	name string
	cfg  react.Config
}

type condDecl struct {
	from, condition, to string
}

// New starts an agent named name (used in errors, in Mermaid output and as
// the graph's name).
func New(name string) *Builder {
	b := &Builder{
		name:     name,
		maxIter:  DefaultMaxIterations,
		timeout:  DefaultTimeout,
		byName:   map[string]*nodeDecl{},
		defaults: map[string]string{},
	}
	if strings.TrimSpace(name) == "" {
		b.fail("the agent's name is empty; give New a name")
	}
	return b
}

func (b *Builder) fail(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}

// Description sets what the agent does, for people and for agents that
// list it (see Agent.Description).
func (b *Builder) Description(text string) *Builder {
	b.description = text
	return b
}

// MaxIterations sets how many LLM node visits one run may make (default
// DefaultMaxIterations); n must be at least 1. See the package
// documentation for what happens when they run out.
func (b *Builder) MaxIterations(n int) *Builder {
	if n < 1 {
		b.fail("MaxIterations(%d): an agent needs at least 1 iteration", n)
		return b
	}
	b.maxIter = n
	return b
}

// Timeout bounds every run (default DefaultTimeout); 0 runs without a
// timeout. A run that times out is cancelled and fails with an error
// matching context.DeadlineExceeded.
func (b *Builder) Timeout(d time.Duration) *Builder {
	if d < 0 {
		b.fail("Timeout(%v) is negative; use a positive duration, or 0 for no timeout", d)
		return b
	}
	b.timeout = d
	return b
}

// Judge sets the model that judges conditional edges (by default, the
// model given to Build). A small, fast model often serves.
func (b *Builder) Judge(m llm.Model) *Builder {
	if m == nil {
		b.fail("Judge was given a nil model")
		return b
	}
	b.judge = m
	return b
}

// JudgeSettings sets the judging phase's model settings: another model,
// temperature, top-p, max tokens and reasoning effort (see llm.Settings),
// applied to every judge request and winning over the judge model's
// defaults. A model in s replaces the one Judge or Build gave.
func (b *Builder) JudgeSettings(s llm.Settings) *Builder {
	if err := s.Check("JudgeSettings"); err != nil {
		b.errs = append(b.errs, err)
		return b
	}
	b.judgeSet = s
	return b
}

// History sets the agent's message-history policy (package llm/history):
// every LLM node without a policy of its own (react.Config.History) and
// the judge see only the part of the conversation it selects. The thread
// keeps every message. The nodes share one running summary (Summarize);
// the judge reads it but never writes it.
func (b *Builder) History(p history.Policy) *Builder {
	if p == nil {
		b.fail("History was given a nil policy")
		return b
	}
	if err := history.Validate(p); err != nil {
		b.fail("History: %v", err)
		return b
	}
	b.history = p
	return b
}

// Middleware sets the middleware chain (package agent/middleware) of
// every LLM node without a chain of its own (react.Config.Middleware), in
// the order given. The judge's calls go through its model hooks too.
// Keys the
// middleware keep (middleware.Stateful) are the agent's state, shared by
// the nodes: a tool limit counts across them.
func (b *Builder) Middleware(mws ...middleware.Middleware) *Builder {
	if _, err := middleware.NewChain(mws...); err != nil {
		b.fail("Middleware: %v", err)
		return b
	}
	b.middleware = mws
	return b
}

// nodeConfig returns n's configuration with the agent's defaults filled
// in.
func (b *Builder) nodeConfig(n *nodeDecl) react.Config {
	cfg := n.cfg
	if cfg.History == nil {
		cfg.History = b.history
	}
	if cfg.Middleware == nil {
		cfg.Middleware = b.middleware
	}
	return cfg
}

// JudgePrompt replaces DefaultJudgePrompt, the judge's instructions. The
// judge always receives the conversation and the condition after them and
// must reply with {"holds": bool, "reason": string}.
func (b *Builder) JudgePrompt(text string) *Builder {
	if strings.TrimSpace(text) == "" {
		b.fail("JudgePrompt was given an empty prompt")
		return b
	}
	b.judgePrompt = text
	return b
}

// LLMNode adds an LLM node: a model (the one given to Build) with the
// system prompt prompt and the tools it may call. Tool names must be unique
// within a node; write tools ask a person's approval (see react.Config's
// Policy, and LLMNodeWith to set one).
func (b *Builder) LLMNode(name, prompt string, tools ...tool.Tool) *Builder {
	return b.LLMNodeWith(name, react.Config{System: prompt, Tools: tools})
}

// LLMNodeWith adds an LLM node configured in full: its own model
// (cfg.Model; nil means the model given to Build), approval policy,
// request options, per-visit step budget (cfg.MaxSteps), structured output
// (cfg.Output, whose key the agent's state then holds) and so on. Leave
// cfg.Messages and cfg.Calls nil: every node shares the agent's
// conversation and call records. The node offers all its tools unless
// cfg.ToolSubset names a key of its own, which a run's input can then set
// (react.ToolSubset itself is not shared: nodes' tools differ). cfg.Name
// defaults to name.
func (b *Builder) LLMNodeWith(name string, cfg react.Config) *Builder {
	switch {
	case strings.TrimSpace(name) == "":
		b.fail("an LLM node has an empty name")
		return b
	case name == graph.START || name == graph.END:
		b.fail("LLM node name %q is reserved by the graph package", name)
		return b
	case b.byName[name] != nil:
		b.fail("LLM node %q is added twice", name)
		return b
	}
	if cfg.Messages != nil && cfg.Messages != react.Messages {
		b.fail("LLM node %q: its Config.Messages is set; leave it nil, since the agent's nodes share one conversation (react.Messages)", name)
	}
	if cfg.Calls != nil && cfg.Calls != react.Calls {
		b.fail("LLM node %q: its Config.Calls is set; leave it nil, since the agent's nodes share one record of tool calls (react.Calls)", name)
	}
	if cfg.Name == "" {
		cfg.Name = name
	}
	n := &nodeDecl{name: name, cfg: cfg}
	b.nodes = append(b.nodes, n)
	b.byName[name] = n
	return b
}

// Edge adds the unconditional edge from one node to another (or to
// graph.END): it is taken when none of from's conditional edges holds. A
// node has at most one.
func (b *Builder) Edge(from, to string) *Builder {
	if prev, ok := b.defaults[from]; ok {
		b.fail("node %q has two unconditional edges (to %s and to %s); a node has at most one, taken when none of its conditions holds (use When for the others)",
			from, target(prev), target(to))
		return b
	}
	b.defaults[from] = to
	return b
}

// When adds a conditional edge: after from answers, if the judge finds
// that condition (plain language, such as "the reviewer asked for
// changes") holds for the conversation so far, the run goes to to (a node,
// or graph.END). A node's conditions are judged in the order When was
// called for them; the first that holds wins.
func (b *Builder) When(from, condition, to string) *Builder {
	if strings.TrimSpace(condition) == "" {
		b.fail("the conditional edge from %q to %s has an empty condition", from, target(to))
		return b
	}
	for _, c := range b.conds {
		if c.from == from && c.condition == condition {
			b.fail("node %q has the condition %q twice (to %s and to %s); only the first could ever be taken",
				from, condition, target(c.to), target(to))
			return b
		}
	}
	b.conds = append(b.conds, condDecl{from: from, condition: condition, to: to})
	return b
}

// Entry sets the node the run starts at.
func (b *Builder) Entry(node string) *Builder {
	if b.entry != "" && b.entry != node {
		b.fail("Entry is set twice (%q, then %q); an agent has one entry node", b.entry, node)
		return b
	}
	b.entry = node
	return b
}

// End makes nodes end points: after one of them answers, the run ends
// unless one of its conditional edges holds. End(n) is Edge(n, graph.END).
// (A node with no edge at all ends the run too; End says so explicitly.)
func (b *Builder) End(nodes ...string) *Builder {
	for _, n := range nodes {
		b.Edge(n, graph.END)
	}
	return b
}

// target formats an edge target for errors.
func target(to string) string {
	if to == graph.END {
		return "the end (graph.END)"
	}
	return fmt.Sprintf("%q", to)
}

// BuildError lists every problem Build found.
type BuildError struct {
	Agent    string
	Problems []error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "builder: agent %q does not build (%d problem", e.Agent, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(strings.ReplaceAll(p.Error(), "\n", "\n    "))
	}
	return b.String()
}

// Unwrap returns the problems.
func (e *BuildError) Unwrap() []error { return e.Problems }

// Build checks the declaration and compiles the agent. model answers for
// every LLM node without a model of its own, and judges conditions unless
// Judge set another; it may be nil only when neither needs it. Every
// problem is reported at once, in a *BuildError.
func (b *Builder) Build(model llm.Model) (*Agent, error) {
	errs := slices.Clone(b.errs)
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	names := make([]string, len(b.nodes))
	for i, n := range b.nodes {
		names[i] = n.name
	}
	known := strings.Join(names, ", ")
	if len(b.nodes) == 0 {
		add("the agent has no LLM nodes; add one with LLMNode")
		known = "none"
	}
	isTarget := func(to string) bool { return to == graph.END || b.byName[to] != nil }
	route := map[string]string{}
	for _, n := range b.nodes {
		route[RouteNode(n.name)] = n.name
	}
	for _, n := range b.nodes {
		if owner, ok := route[n.name]; ok {
			add("LLM node %q has the name of node %q's route node; rename it", n.name, owner)
		}
	}

	// Edges.
	for _, from := range slices.Sorted(maps.Keys(b.defaults)) {
		to := b.defaults[from]
		if b.byName[from] == nil {
			add("an edge leaves %q, which is not an LLM node (nodes: %s)", from, known)
		}
		if !isTarget(to) {
			add("the edge from %q goes to %q, which is not an LLM node (nodes: %s) nor graph.END", from, to, known)
		}
	}
	for _, c := range b.conds {
		if b.byName[c.from] == nil {
			add("the condition %q is on %q, which is not an LLM node (nodes: %s)", c.condition, c.from, known)
		}
		if !isTarget(c.to) {
			add("the condition %q from %q goes to %q, which is not an LLM node (nodes: %s) nor graph.END", c.condition, c.from, c.to, known)
		}
	}
	errs = append(errs, b.checkExtras(known)...)
	errs = append(errs, b.checkParallel(known)...)
	switch {
	case b.entry == "":
		add("the agent has no entry node; set one with Entry")
	case b.byName[b.entry] == nil:
		add("the entry %q is not an LLM node (nodes: %s)", b.entry, known)
	default:
		for _, n := range b.unreachable() {
			add("LLM node %q cannot be reached from the entry %q; add an edge into it, or remove it", n, b.entry)
		}
	}
	if loop := b.unconditionalLoop(); loop != nil {
		add("the nodes %s form a loop of unconditional edges, which could only end when the iterations run out; make one of the edges conditional (When)",
			strings.Join(loop, " → "))
	}

	// Models.
	judge := b.judge
	if judge == nil {
		judge = model
	}
	judge = llm.WithSettings(judge, b.judgeSet)
	if len(b.conds) > 0 && judge == nil {
		add("the agent has conditional edges but no judge model; pass a model to Build or set one with Judge")
	}
	graphs := make(map[string]*graph.Graph, len(b.nodes))
	for _, n := range b.nodes {
		cfg := b.nodeConfig(n)
		if cfg.Model == nil {
			cfg.Model = model
		}
		if cfg.Model == nil {
			add("LLM node %q has no model; pass a model to Build or give the node its own (LLMNodeWith)", n.name)
			cfg.Model = noModel{} // so react still checks the rest of cfg
		}
		g, err := react.New(cfg)
		if err != nil {
			add("LLM node %q: %w", n.name, err)
			continue
		}
		graphs[n.name] = g
	}
	if len(errs) > 0 {
		return nil, &BuildError{Agent: b.name, Problems: errs}
	}
	return b.compile(graphs, judge)
}

// noModel stands in for a missing model while Build checks a node's
// configuration; the agent is never built with it.
type noModel struct{}

func (noModel) Name() string { return "none" }
func (noModel) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	return nil, errors.New("builder: no model")
}
func (noModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errors.New("builder: no model")) }
}

// unreachable lists, in declaration order, the nodes no edge path from the
// entry reaches.
func (b *Builder) unreachable() []string {
	seen := map[string]bool{b.entry: true}
	queue := []string{b.entry}
	visit := func(to string) {
		if b.byName[to] != nil && !seen[to] {
			seen[to] = true
			queue = append(queue, to)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if to, ok := b.defaults[n]; ok {
			visit(to)
		}
		for _, to := range b.parallel[n] {
			visit(to)
		}
		for _, j := range b.joins {
			if slices.Contains(j.from, n) {
				visit(j.to)
			}
		}
		for _, c := range b.conds {
			if c.from == n {
				visit(c.to)
			}
		}
	}
	var out []string
	for _, n := range b.nodes {
		if !seen[n.name] {
			out = append(out, n.name)
		}
	}
	return out
}

// unconditionalLoop returns a cycle of unconditional edges between nodes
// none of which has a condition (a → b → a), or nil. Such a loop can never
// end by itself: no judge is ever asked along it.
func (b *Builder) unconditionalLoop() []string {
	hasCond := map[string]bool{}
	for _, c := range b.conds {
		hasCond[c.from] = true
	}
	done := map[string]bool{}
	for _, n := range b.nodes {
		var path []string
		at := map[string]int{}
		cur := n.name
		for !done[cur] && b.byName[cur] != nil && !hasCond[cur] {
			if i, ok := at[cur]; ok {
				return append(path[i:], cur)
			}
			at[cur] = len(path)
			path = append(path, cur)
			next, ok := b.defaults[cur]
			if !ok {
				break
			}
			cur = next
		}
		for _, p := range path {
			done[p] = true
		}
	}
	return nil
}

// compile wires the checked declaration into a graph: each LLM node as a
// subgraph followed by its route node.
func (b *Builder) compile(graphs map[string]*graph.Graph, judge llm.Model) (*Agent, error) {
	keys := []graph.AnyKey{react.Messages, react.Calls, Judgements, decisions, legacyDecision, entryKey}
	// A node's structured-output key and its own tool-subset key are
	// shared with the agent's state, so a run's input can set them and
	// Result.FinalState holds them. react.ToolSubset stays private to
	// each node: one subset cannot suit nodes whose tools differ.
	for _, n := range b.nodes {
		for _, k := range b.nodeConfig(n).StateKeys() {
			if k != graph.AnyKey(react.ToolSubset) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	gb := graph.New(keys...)
	gb.SetName(b.name)
	prompt := b.judgePrompt
	if prompt == "" {
		prompt = DefaultJudgePrompt
	}
	a := &Agent{name: b.name, description: b.description, nodes: map[string]bool{}}
	entries := map[string]string{}
	chain, _ := middleware.NewChain(b.middleware...) // checked by Middleware
	for _, n := range b.nodes {
		r := &router{
			agent:  a,
			node:   n.name,
			judge:  judge,
			policy: b.history,
			system: llm.System(prompt),
			chain:  chain,
		}
		if to, ok := b.defaults[n.name]; ok {
			r.otherwise = to
		} else {
			r.otherwise = graph.END
		}
		r.parallel = b.parallel[n.name]
		paths := map[string]string{pathOtherwise: r.otherwise, pathLimit: graph.END}
		for _, c := range b.conds {
			if c.from == n.name {
				r.conds = append(r.conds, c)
				paths[pathKey(c.condition)] = c.to
			}
		}
		gb.AddSubgraph(n.name, graphs[n.name], b.nodeOptions(n.name)...)
		entries[n.name] = n.name
		info := NodeInfo{Name: n.name}
		if x := b.extras[n.name]; x != nil {
			info.Description = x.description
		}
		a.infos = append(a.infos, info)
		gb.AddEdge(n.name, RouteNode(n.name))
		gb.AddNode(RouteNode(n.name), r.run)
		if len(r.parallel) > 0 {
			gb.AddFanout(RouteNode(n.name), fanOut(n.name, paths, r.parallel), fanDests(paths, r.parallel)...)
		} else {
			gb.AddConditionalEdges(RouteNode(n.name), decided(n.name), paths)
		}
		a.nodes[n.name] = true
	}
	for _, j := range b.joins {
		from := make([]string, len(j.from))
		for i, f := range j.from {
			from[i] = RouteNode(f)
		}
		gb.AddJoin(j.to, from...)
	}
	gb.AddConditionalEdges(graph.START, a.entry(b.entry), entries)
	opts := []graph.RunOption{graph.WithStepLimit(2 * b.maxIter)}
	if b.timeout > 0 {
		opts = append(opts, graph.WithTimeout(b.timeout))
	}
	g, err := gb.Compile(opts...)
	if err != nil {
		// Build checks what Compile would; reaching this is a bug here.
		return nil, &BuildError{Agent: b.name, Problems: []error{fmt.Errorf("the agent's graph does not compile: %w", err)}}
	}
	a.g = g
	return a, nil
}
