package middleware

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Middleware is one link of a Chain. Name identifies it in errors and must
// be unique in its chain. A middleware implements at least one of
// ModelWrapper, StreamWrapper, ToolWrapper, BeforeTurner and AfterTurner;
// it may also be Stateful or a Toolbox.
type Middleware interface {
	Name() string
}

// ModelCall is one model request on its way through the chain. A
// middleware may change Request (clone it first: the agent may reuse
// slices; see llm.Request.Clone) and Model before calling next.
type ModelCall struct {
	// Request is what the model is asked.
	Request *llm.Request
	// Model answers the request: the agent's model unless a middleware
	// routes the call elsewhere.
	Model llm.Model
	// State is the calling step's state snapshot (read it with a key's
	// Get); the zero State outside a graph.
	State graph.State
	// Tail are messages the agent puts after the history for this call
	// only (a final-answer instruction). The innermost handler appends
	// them to Request.Messages, so middleware that selects or edits the
	// history (History, ClearToolResults) never sees them as history.
	Tail []llm.Message
	// Pending are the writes earlier model calls of the same step added
	// (Write), which State does not show yet: an agent that makes several
	// calls in one step (planexec's planner phases) passes them on, and a
	// middleware reading its own key reads it here first (Key.In).
	Pending graph.Update
	writes  []graph.Write
}

// Final returns the request to send: Request with Tail appended. Inner
// handlers other than Chain.CallModel use it.
func (c *ModelCall) Final() *llm.Request {
	if len(c.Tail) == 0 {
		return c.Request
	}
	r := c.Request.Clone()
	r.Messages = append(r.Messages, c.Tail...)
	return r
}

// Write adds state writes that the agent applies with the model's reply,
// in the same step. Use it for what must survive a crash or an interrupt.
func (c *ModelCall) Write(ws ...graph.Write) { c.writes = append(c.writes, ws...) }

// Writes returns the writes added with Write, for the agent to apply.
func (c *ModelCall) Writes() []graph.Write { return c.writes }

// ModelHandler answers a model call: next in a chain, or the call itself.
type ModelHandler func(ctx context.Context, call *ModelCall) (*llm.Response, error)

// ModelWrapper wraps model calls. WrapModel calls next to go on (any
// number of times) or returns a response of its own to short-circuit.
type ModelWrapper interface {
	Middleware
	WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error)
}

// StreamWrapper wraps the chunk stream of a streamed reply, before the
// chunks reach the graph's message stream and the assembler. It is used
// only when the run streams messages; ModelWrapper sees the assembled
// reply either way.
type StreamWrapper interface {
	Middleware
	WrapStream(ctx context.Context, req *llm.Request, chunks iter.Seq2[llm.Chunk, error]) iter.Seq2[llm.Chunk, error]
}

// ToolCall is one tool call on its way through the chain. A middleware
// may change Call.Arguments before calling next.
type ToolCall struct {
	// Call is the call the model asked for.
	Call llm.ToolCall
	// State is the tool step's state snapshot.
	State graph.State
	// Batch is every call of the reply this call belongs to, in order
	// (this one included), so a middleware can count calls that run in
	// parallel deterministically.
	Batch []llm.ToolCall
	// Tools describes the agent's tools (nil when the agent gives no
	// description): Approval reads a tool's kind, schema and summary from
	// it. ToolRunner sets it to its tool node.
	Tools Catalog
}

// Catalog describes an agent's tools to middleware. tool.Node implements
// it.
type Catalog interface {
	// Lookup returns the description of the tool with this name.
	Lookup(name string) (tool.Info, bool)
	// CheckArguments checks arguments for the tool, returning them
	// normalized or an error the model can act on.
	CheckArguments(name string, args json.RawMessage) (json.RawMessage, error)
	// Summarize describes a call in a sentence for a person.
	Summarize(name string, args json.RawMessage) string
}

// ToolResult is what a tool call produced.
type ToolResult struct {
	// Message is the tool message the model sees (llm.ToolResult or
	// llm.ToolError for Call).
	Message llm.Message
	// Writes are state writes applied with the message.
	Writes []graph.Write
	// Refused, when set, says why a middleware answered the call without
	// running it; agents record it as the call's error.
	Refused string
	// Approval, when set, is how a person decided about the call
	// (Approval sets it); agents record it (tool.Record.Approval).
	Approval tool.Outcome
	// EditedArguments are the arguments a person's edit ran the call
	// with (Approval with tool.OutcomeEdited).
	EditedArguments string
}

// Refuse returns a result that answers call with text as a tool error,
// without running it; problem is recorded as the call's error.
func Refuse(call llm.ToolCall, text, problem string) *ToolResult {
	return &ToolResult{Message: llm.ToolError(call, text), Refused: problem}
}

// ToolHandler answers a tool call: next in a chain, or the agent's tool
// runner.
type ToolHandler func(ctx context.Context, call *ToolCall) (*ToolResult, error)

// ToolWrapper wraps tool calls. WrapTool calls next to run the call, or
// returns a result of its own (see Refuse). Graph interrupts and
// cancellation errors from next must be returned as they are.
type ToolWrapper interface {
	Middleware
	WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error)
}

// Turn is one agent turn as the turn hooks see it: the history that
// starts it (BeforeTurn) or the reply that ends it (AfterTurn).
type Turn struct {
	// State is the step's state snapshot.
	State graph.State
	// Messages is the history, oldest first, with the changes earlier
	// hooks made (Replace). Do not modify it; use Replace.
	Messages []llm.Message
	// Answer is the reply that ends the turn (AfterTurn only; nil in
	// BeforeTurn). A hook may change it before it is saved.
	Answer *llm.Message
	writes []graph.Write
	repl   []llm.Message
}

// Replace replaces the message with m's ID in the history, in state as in
// the requests that follow. Use it to edit a user message (redaction).
func (t *Turn) Replace(m llm.Message) {
	for i := range t.Messages {
		if t.Messages[i].ID == m.ID {
			t.Messages[i] = m
		}
	}
	t.repl = append(t.repl, m)
}

// Replaced returns the messages given to Replace, in order.
func (t *Turn) Replaced() []llm.Message { return t.repl }

// Write adds state writes applied with the turn's step.
func (t *Turn) Write(ws ...graph.Write) { t.writes = append(t.writes, ws...) }

// Writes returns the writes added with Write.
func (t *Turn) Writes() []graph.Write { return t.writes }

// BeforeTurner runs before the first model call of a turn.
type BeforeTurner interface {
	Middleware
	BeforeTurn(ctx context.Context, t *Turn) error
}

// AfterTurner runs after the reply that ends a turn (one without tool
// calls), before it is saved.
type AfterTurner interface {
	Middleware
	AfterTurn(ctx context.Context, t *Turn) error
}

// Stateful is a middleware that keeps state in graph keys; agents add the
// keys to their graph (see Chain.StateKeys).
type Stateful interface {
	StateKeys() []graph.AnyKey
}

// Ender is a middleware that can end a run from a tool call (ToolLimit
// with EndRun). The end is graph state: after the call's round, the
// agent's model node finds it (Chain.Ended) and ends the turn with its
// message instead of asking the model again.
type Ender interface {
	// Ended returns the final message of an end recorded in s, and the
	// write that clears it.
	Ended(s graph.State) (message string, clear graph.Write, ok bool)
}

// Toolbox is a middleware that gives the agent tools (a read tool for
// offloaded results, say); agents offer them with their own.
type Toolbox interface {
	Tools() []tool.Tool
}
