package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultMaxParallel is how many calls a Node runs at once when
// NodeConfig.MaxParallel is zero.
const DefaultMaxParallel = 8

// NodeConfig configures a tool node.
type NodeConfig struct {
	// Messages is the chat history key (llm.NewMessagesKey). Route reads
	// the calls from its last assistant message; each call appends its
	// tool message. Required.
	Messages *graph.Key[[]llm.Message]
	// Records, when set, receives a Record for every finished call, keyed
	// by call ID (see NewRecordsKey and LookupCall).
	Records *graph.Key[map[string]Record]
	// Tools are the tools the model may call; names must be unique.
	Tools []Tool
	// MaxParallel bounds how many calls the node runs at once (0:
	// DefaultMaxParallel). The bound is the Node's: every run of every
	// graph the Node is wired into shares it. Calls must not wait for one another: with more
	// such calls than slots they would wait forever.
	MaxParallel int
	// Logger receives tool failures and panics, with the call ID (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// Node runs a model's tool calls as graph tasks, one task per call: a model
// node and the calls it requests are separate nodes. Wire it into a
// graph.Builder with Wire, or with Route and Run for custom wiring.
//
// Each call:
//   - with an unknown tool name or arguments the tool cannot use, gets a
//     tool error message asking the model to fix the call (the run goes
//     on);
//   - runs the tool with the step's state in its context (StateFrom) and a
//     slot of the node's parallelism bound;
//   - appends one tool message to the history: the result, or a tool error
//     message for an error or a panic (both logged with the call ID);
//   - writes its Record, when the node has a records key.
//
// Graph interrupts raised by a tool, and errors while the run's context is
// cancelled, are returned as they are: they stop the run rather than reach
// the model. Because every call is its own task, a finished call is never
// run again when a run resumes, and the results land in the history in call
// order whatever order the calls finish in.
//
// A Node does not ask anyone before a call: a person's approval is the
// approval middleware's (middleware.Approval in agent/middleware), which
// the agents put in front of their node and which reads the tools'
// descriptions through Lookup, CheckArguments and Summarize.
//
// A Node is safe for concurrent use by many runs.
type Node struct {
	messages *graph.Key[[]llm.Message]
	records  *graph.Key[map[string]Record]
	tools    map[string]*entry
	order    []*entry
	names    string // sorted, for the unknown-tool message
	sem      chan struct{}
	log      *slog.Logger
	stop     bool // has the built-in stop tool
}

type entry struct {
	tool      Tool
	info      Info
	validate  func(json.RawMessage) error
	summarize func(json.RawMessage) string
	// checksOwn: the tool's Call checks its arguments exactly as validate
	// does (Func tools), so the node skips validate.
	checksOwn bool
}

// selfChecking is implemented by tools whose Call validates the arguments
// the same way as ValidateArguments.
type selfChecking interface{ checksOwnArguments() }

// NewNode makes a tool node. It reports every problem in cfg at once: a
// missing messages key, nil tools, invalid or duplicate names, parameter
// schemas that do not compile, a negative MaxParallel.
func NewNode(cfg NodeConfig) (*Node, error) {
	var errs []error
	if cfg.Messages == nil {
		errs = append(errs, errors.New("tool node: NodeConfig.Messages is nil; pass the history key (llm.NewMessagesKey)"))
	}
	if cfg.MaxParallel < 0 {
		errs = append(errs, fmt.Errorf("tool node: MaxParallel is %d; use a positive bound, or 0 for the default (%d)", cfg.MaxParallel, DefaultMaxParallel))
	}
	n := &Node{
		messages: cfg.Messages,
		records:  cfg.Records,
		tools:    make(map[string]*entry, len(cfg.Tools)),
		log:      cfg.Logger,
	}
	if n.log == nil {
		n.log = slog.Default()
	}
	for i, t := range cfg.Tools {
		e, err := newEntry(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("tool node: tool %d: %w", i, err))
			continue
		}
		if n.tools[e.info.Name] != nil {
			errs = append(errs, fmt.Errorf("tool node: two tools are named %q; names must be unique", e.info.Name))
			continue
		}
		if _, ok := t.(*stopTool); ok {
			n.stop = true
		}
		n.tools[e.info.Name] = e
		n.order = append(n.order, e)
	}
	names := make([]string, 0, len(n.order))
	for _, e := range n.order {
		names = append(names, e.info.Name)
	}
	slices.Sort(names)
	n.names = strings.Join(names, ", ")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	bound := cfg.MaxParallel
	if bound == 0 {
		bound = DefaultMaxParallel
	}
	n.sem = make(chan struct{}, bound)
	return n, nil
}

func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, errors.New("the tool is nil")
	}
	info := t.Info()
	if err := checkName(info.Name); err != nil {
		return nil, err
	}
	_, own := t.(selfChecking)
	e := &entry{tool: t, info: info, checksOwn: own}
	if v, ok := t.(Validator); ok {
		e.validate = func(args json.RawMessage) (err error) {
			// Whatever the tool accepts, an approval request must carry
			// a JSON object.
			if err := (*schema)(nil).check(info.Name, args); err != nil {
				return err
			}
			defer func() {
				if v := recover(); v != nil {
					err = &panicError{Tool: info.Name, Value: v, Stack: debug.Stack()}
				}
			}()
			err = v.ValidateArguments(args)
			if err != nil && !IsArgumentError(err) {
				err = &ArgumentError{Tool: info.Name, Problem: err.Error(), Err: err}
			}
			return err
		}
	} else {
		s, err := compileSchema(info.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", info.Name, err)
		}
		e.validate = func(args json.RawMessage) error { return s.check(info.Name, args) }
	}
	if sm, ok := t.(Summarizer); ok {
		e.summarize = sm.Summarize
	} else {
		e.summarize = func(args json.RawMessage) string { return defaultSummary(info.Name, args) }
	}
	return e, nil
}

// Specs returns the descriptions of the node's tools for a model request,
// in the order they were given.
func (n *Node) Specs() []llm.ToolSpec {
	specs := make([]llm.ToolSpec, len(n.order))
	for i, e := range n.order {
		specs[i] = e.info.Spec()
	}
	return specs
}

// Wire adds the node to b as the payload node name and connects it to the
// model node: after model, each tool call of its reply starts one task of
// name (Route), and a reply without calls goes to next; after the calls,
// the run goes back to model, or to next when the turn called the built-in
// stop tool (see Stopped) and the node has it. next may be graph.END. The
// graph's keys must include the node's messages and records keys. opts
// apply to the tool node (a Timeout, say).
func (n *Node) Wire(b *graph.Builder, name, model, next string, opts ...graph.NodeOption) {
	graph.AddSendNode(b, name, n.Run, opts...)
	b.AddFanout(model, n.Route(name, next), name, next)
	if !n.stop {
		b.AddEdge(name, model)
		return
	}
	b.AddConditionalEdges(name, func(_ context.Context, s graph.State) (string, error) {
		if _, ok := Stopped(n.messages.Get(s)); ok {
			return "stop", nil
		}
		return "continue", nil
	}, map[string]string{"continue": model, "stop": next})
}

// Route returns a fan-out function for the edge after a model node: when
// the last message of the history is an assistant message with tool calls,
// it sends each call, in order, to node (a node added with Run); otherwise
// it goes to next. Declare both node and next as the fan-out's
// destinations. A call without an ID, or two calls sharing one, fail the
// run: the provider adapter must give every call a unique ID.
func (n *Node) Route(node, next string) graph.FanoutFunc {
	return n.RouteBy(func(llm.ToolCall) string { return node }, next)
}

// RouteBy is Route for graphs with several payload nodes over this Node:
// nodeFor names the node each call is sent to (an agent's own node, say,
// so its events carry its name). Its "go on to next" answer is one slice
// shared by every call: read it (as the engine does), don't change it.
func (n *Node) RouteBy(nodeFor func(llm.ToolCall) string, next string) graph.FanoutFunc {
	// Going on to next is the common answer (every reply without tool
	// calls): one slice made here, returned clipped, which the engine
	// copies into the task's routes (a FanoutFunc's result is read, never
	// changed), instead of one per call.
	toNext := []graph.Target{graph.To(next)}
	return func(_ context.Context, s graph.State) ([]graph.Target, error) {
		msgs := n.messages.Get(s)
		if len(msgs) == 0 {
			return slices.Clip(toNext), nil
		}
		last := msgs[len(msgs)-1]
		if last.Role != llm.RoleAssistant || len(last.ToolCalls) == 0 {
			return slices.Clip(toNext), nil
		}
		targets := make([]graph.Target, len(last.ToolCalls))
		seen := make(map[string]bool, len(last.ToolCalls))
		for i, c := range last.ToolCalls {
			switch {
			case c.ID == "":
				return nil, fmt.Errorf("tool route: call %d (%q) of assistant message %s has no ID; the model adapter must give every call one (llm.NewCallID)", i, c.Name, last.ID)
			case seen[c.ID]:
				return nil, fmt.Errorf("tool route: assistant message %s has two calls with ID %q; call IDs must be unique", last.ID, c.ID)
			}
			seen[c.ID] = true
			targets[i] = graph.Send(nodeFor(c), c)
		}
		return targets, nil
	}
}

// Run handles one tool call; it is the function of the payload node that
// Route sends calls to (graph.AddSendNode(b, name, n.Run)). See Node for
// what it does. s is the step's snapshot.
func (n *Node) Run(ctx context.Context, s graph.State, call llm.ToolCall) (graph.Output, error) {
	msg, rec, err := n.Handle(ctx, s, call)
	if err != nil {
		return nil, err
	}
	return n.writes(msg, rec), nil
}

// Handle does what Run does but returns the call's tool message and
// record instead of writing them, for agents that pass calls through
// middleware; Record turns them into Run's writes. An error stops the run
// (an interrupt, or cancellation).
func (n *Node) Handle(ctx context.Context, s graph.State, call llm.ToolCall) (llm.Message, Record, error) {
	rec := newRecord(ctx, call)
	ctx, end := graph.Observe(ctx, graph.Op{Kind: graph.OpToolCall, Tool: call.Name, CallID: call.ID})
	msg, err := n.handle(ctx, s, call, &rec)
	switch {
	case err != nil:
		end(graph.OpEnd{Err: err})
		return llm.Message{}, rec, err
	case rec.Error != "":
		end(graph.OpEnd{Err: errors.New(rec.Error)})
	default:
		end(graph.OpEnd{})
	}
	return msg, rec, nil
}

// Record returns the writes of a handled call: msg appended to the
// history and, when the node keeps records, rec with msg's text as its
// result.
func (n *Node) Record(msg llm.Message, rec Record) graph.Update { return n.writes(msg, rec) }

// Refuse answers call without running it or asking anyone, for agents
// that gate calls themselves (a tool left out of the run's subset, a bad
// call reference): the model gets text as a tool error message and, when
// the node keeps records, the call is recorded with problem as its error.
func (n *Node) Refuse(ctx context.Context, call llm.ToolCall, text, problem string) graph.Update {
	rec := newRecord(ctx, call)
	rec.Error = problem
	return n.writes(llm.ToolError(call, text), rec)
}

func newRecord(ctx context.Context, call llm.ToolCall) Record {
	return Record{
		CallID:    call.ID,
		Tool:      call.Name,
		Arguments: call.Arguments,
		Approval:  OutcomeNotNeeded,
		Step:      graph.Step(ctx),
		Node:      graph.NodeName(ctx),
		TaskID:    graph.TaskID(ctx),
	}
}

// writes appends msg to the history and, with a records key, records the
// call with msg's text as its result.
func (n *Node) writes(msg llm.Message, rec Record) graph.Update {
	rec.Result = msg.Text()
	if n.records == nil {
		return graph.Writes(graph.Append(n.messages, msg))
	}
	return graph.Writes(
		graph.Append(n.messages, msg),
		n.records.Set(map[string]Record{rec.CallID: rec}),
	)
}

// handle returns the tool message answering call, or an error that must
// stop the run (an interrupt, or cancellation).
func (n *Node) handle(ctx context.Context, s graph.State, call llm.ToolCall, rec *Record) (llm.Message, error) {
	e := n.tools[call.Name]
	if e == nil {
		rec.Error = fmt.Sprintf("unknown tool %q", call.Name)
		return llm.ToolError(call, n.unknownTool(call.Name)), nil
	}
	args := normalizeArgs(json.RawMessage(call.Arguments))
	if !e.checksOwn {
		if err := e.validate(args); err != nil {
			rec.Error = err.Error()
			return llm.ToolError(call, n.failure(ctx, call, err)), nil
		}
	}
	result, err := n.invoke(ctx, e, s, args, rec)
	if err != nil {
		if stops(ctx, err) {
			return llm.Message{}, err
		}
		rec.Error = err.Error()
		return llm.ToolError(call, n.failure(ctx, call, err)), nil
	}
	return llm.ToolResult(call, result), nil
}

// summary describes a call for the approver; a summarizer that panics
// falls back to the default description.
func (n *Node) summary(e *entry, args json.RawMessage) (s string) {
	defer func() {
		if r := recover(); r != nil {
			n.log.Warn("tool summary panicked", slog.String("tool", e.info.Name), slog.Any("panic", r))
			s = defaultSummary(e.info.Name, args)
		}
	}()
	return e.summarize(args)
}

// stops reports whether err must stop the run instead of reaching the
// model: a graph interrupt, or any error while the run is cancelled.
func stops(ctx context.Context, err error) bool {
	return errors.Is(err, graph.ErrInterrupted) || ctx.Err() != nil
}

func (n *Node) unknownTool(name string) string {
	what := fmt.Sprintf("there is no tool named %q", name)
	if name == "" {
		what = "this call names no tool (its name is empty)"
	}
	if n.names == "" {
		return fmt.Sprintf("Error: %s, and no tools are available.", what)
	}
	return fmt.Sprintf("Error: %s. The available tools are: %s. Call one of them by its exact name.", what, n.names)
}

func fixArguments(err error) string {
	return fmt.Sprintf("Error: %v. Fix the arguments and call the tool again.", err)
}

func argProblem(err error) string {
	if ae, ok := errors.AsType[*ArgumentError](err); ok {
		return ae.Problem
	}
	return err.Error()
}

// Lookup returns the description of the node's tool with this name, and
// false when the node has none.
func (n *Node) Lookup(name string) (Info, bool) {
	e := n.tools[name]
	if e == nil {
		return Info{}, false
	}
	return e.info, true
}

// CheckArguments checks arguments for the node's tool with this name, as
// the node does before running it: against the tool's schema, or with its
// own validator (a panicking validator is an error, not a crash). It
// returns the arguments normalized (empty becomes {}), or an error the
// model can act on: an unknown tool, or arguments the tool cannot use.
func (n *Node) CheckArguments(name string, args json.RawMessage) (json.RawMessage, error) {
	e := n.tools[name]
	if e == nil {
		return nil, errors.New(n.unknownTool(name))
	}
	args = normalizeArgs(args)
	if err := e.validate(args); err != nil {
		return nil, err
	}
	return args, nil
}

// Summarize describes a call of the node's tool with these arguments in a
// sentence, for a person asked to approve it (see Summarizer). A
// summarizer that panics, or an unknown tool, gives the default
// description.
func (n *Node) Summarize(name string, args json.RawMessage) string {
	e := n.tools[name]
	if e == nil {
		return defaultSummary(name, args)
	}
	return n.summary(e, args)
}
