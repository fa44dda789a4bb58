package middleware

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// Chain is an ordered list of middleware, checked once. The zero Chain and
// a nil *Chain are empty chains: their handlers are the inner ones.
type Chain struct {
	all    []Middleware
	model  []ModelWrapper
	stream []StreamWrapper
	tool   []ToolWrapper
	before []BeforeTurner
	after  []AfterTurner
}

// NewChain returns the chain of mws in the order given: the first is the
// outermost. It reports every problem at once: a nil middleware, an empty
// or duplicate name, a middleware that implements no hook.
func NewChain(mws ...Middleware) (*Chain, error) {
	c := &Chain{}
	var errs []error
	seen := map[string]bool{}
	for i, m := range mws {
		if m == nil {
			errs = append(errs, fmt.Errorf("middleware %d is nil", i))
			continue
		}
		name := m.Name()
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("middleware %d (%T) has an empty name", i, m))
		case seen[name]:
			errs = append(errs, fmt.Errorf("two middleware are named %q; names must be unique in a chain", name))
		}
		seen[name] = true
		hooks := 0
		if w, ok := m.(ModelWrapper); ok {
			c.model = append(c.model, w)
			hooks++
		}
		if w, ok := m.(StreamWrapper); ok {
			c.stream = append(c.stream, w)
			hooks++
		}
		if w, ok := m.(ToolWrapper); ok {
			c.tool = append(c.tool, w)
			hooks++
		}
		if w, ok := m.(BeforeTurner); ok {
			c.before = append(c.before, w)
			hooks++
		}
		if w, ok := m.(AfterTurner); ok {
			c.after = append(c.after, w)
			hooks++
		}
		if hooks == 0 {
			errs = append(errs, fmt.Errorf("middleware %q (%T) implements no hook (WrapModel, WrapStream, WrapTool, BeforeTurn or AfterTurn)", name, m))
		}
		c.all = append(c.all, m)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("middleware chain: %w", err)
	}
	return c, nil
}

// Then returns a chain of c's middleware followed by mws (inside them).
func (c *Chain) Then(mws ...Middleware) (*Chain, error) {
	return NewChain(append(c.Middleware(), mws...)...)
}

// Middleware returns the chain's middleware in order.
func (c *Chain) Middleware() []Middleware {
	if c == nil {
		return nil
	}
	return slices.Clone(c.all)
}

// Names returns the middleware names in order.
func (c *Chain) Names() []string {
	var names []string
	for _, m := range c.Middleware() {
		names = append(names, m.Name())
	}
	return names
}

// Len returns the number of middleware in the chain.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.all)
}

// StateKeys returns the keys of the chain's Stateful middleware.
func (c *Chain) StateKeys() []graph.AnyKey {
	var keys []graph.AnyKey
	for _, m := range c.Middleware() {
		if s, ok := m.(Stateful); ok {
			keys = append(keys, s.StateKeys()...)
		}
	}
	return keys
}

// Ended reports whether a middleware of the chain (an Ender) ended the
// run in s. It returns the final message of the first, in chain order,
// and the writes that clear every recorded end, for the agent to apply
// with that message.
func (c *Chain) Ended(s graph.State) (string, []graph.Write, bool) {
	var (
		msg   string
		found bool
		clear []graph.Write
	)
	if c == nil {
		return "", nil, false
	}
	for _, m := range c.all { // read only: no copy (Middleware copies)
		e, ok := m.(Ender)
		if !ok {
			continue
		}
		text, w, ok := e.Ended(s)
		if !ok {
			continue
		}
		if !found {
			msg, found = text, true
		}
		clear = append(clear, w)
	}
	return msg, clear, found
}

// Tools returns the tools of the chain's Toolbox middleware.
func (c *Chain) Tools() []tool.Tool {
	var tools []tool.Tool
	for _, m := range c.Middleware() {
		if b, ok := m.(Toolbox); ok {
			tools = append(tools, b.Tools()...)
		}
	}
	return tools
}

// WrapModel returns inner wrapped in the chain's model wrappers, the first
// outermost. Build it once and call it for every request; a nil inner
// means CallModel.
func (c *Chain) WrapModel(inner ModelHandler) ModelHandler {
	if inner == nil {
		inner = c.CallModel
	}
	if c == nil {
		return inner
	}
	h := inner
	for _, w := range slices.Backward(c.model) {
		next := h
		h = func(ctx context.Context, call *ModelCall) (*llm.Response, error) {
			return w.WrapModel(ctx, call, next)
		}
	}
	return h
}

// CallModel is the innermost model handler: llm.Call with call.Model,
// whose stream (when the run streams messages) goes through the chain's
// stream wrappers. Its usage, streaming and repairs are llm.Call's.
func (c *Chain) CallModel(ctx context.Context, call *ModelCall) (*llm.Response, error) {
	if call.Model == nil {
		return nil, errors.New("middleware: the model call has no model")
	}
	if call.Request == nil {
		return nil, errors.New("middleware: the model call has no request")
	}
	m := call.Model
	if c != nil && len(c.stream) > 0 {
		m = &streamModel{Model: m, wrappers: c.stream}
	}
	return llm.Call(ctx, m, call.Final())
}

// streamModel passes a model's stream through stream wrappers, the first
// outermost (it sees the chunks last).
type streamModel struct {
	llm.Model
	wrappers []StreamWrapper
}

func (m *streamModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	s := m.Model.Stream(ctx, req)
	for _, w := range slices.Backward(m.wrappers) {
		s = w.WrapStream(ctx, req, s)
	}
	return s
}

// Limits keeps the wrapped model's reply limits (llm.LimitsOf).
func (m *streamModel) Limits() llm.Limits { return llm.LimitsOf(m.Model) }

// WrapTool returns inner wrapped in the chain's tool wrappers, the first
// outermost. Build it once and call it for every call.
func (c *Chain) WrapTool(inner ToolHandler) ToolHandler {
	if c == nil {
		return inner
	}
	h := inner
	for _, w := range slices.Backward(c.tool) {
		next := h
		h = func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
			return w.WrapTool(ctx, call, next)
		}
	}
	return h
}

// HasTurnHooks reports whether the chain has BeforeTurn or AfterTurn
// hooks.
func (c *Chain) HasTurnHooks() bool { return c != nil && len(c.before)+len(c.after) > 0 }

// BeforeTurn runs the BeforeTurn hooks in chain order. The first error
// stops it, wrapped with the middleware's name.
func (c *Chain) BeforeTurn(ctx context.Context, t *Turn) error {
	if c == nil {
		return nil
	}
	for _, h := range c.before {
		if err := h.BeforeTurn(ctx, t); err != nil {
			return fmt.Errorf("middleware %q: before turn: %w", h.Name(), err)
		}
	}
	return nil
}

// AfterTurn runs the AfterTurn hooks in reverse chain order (the
// outermost last). The first error stops it.
func (c *Chain) AfterTurn(ctx context.Context, t *Turn) error {
	if c == nil {
		return nil
	}
	for _, h := range slices.Backward(c.after) {
		if err := h.AfterTurn(ctx, t); err != nil {
			return fmt.Errorf("middleware %q: after turn: %w", h.Name(), err)
		}
	}
	return nil
}

// CallWrappers returns the middleware of mws that only wrap calls: those
// without turn hooks, state keys or tools, which an agent that runs no
// turn hooks and keeps no middleware state (agent/router) can run. An app
// that gives one chain to a router and its sub-agents gives the router
// these.
func CallWrappers(mws []Middleware) []Middleware {
	var out []Middleware
	for _, m := range mws {
		_, bt := m.(BeforeTurner)
		_, at := m.(AfterTurner)
		_, st := m.(Stateful)
		_, tb := m.(Toolbox)
		if m != nil && !bt && !at && !st && !tb {
			out = append(out, m)
		}
	}
	return out
}
