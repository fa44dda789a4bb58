package middleware

import (
	"context"

	"github.com/trellis-agents/trellis/llm"
)

// ModelFunc returns a ModelWrapper named name that runs fn.
func ModelFunc(name string, fn func(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error)) ModelWrapper {
	return modelFunc{name, fn}
}

type modelFunc struct {
	name string
	fn   func(context.Context, *ModelCall, ModelHandler) (*llm.Response, error)
}

func (m modelFunc) Name() string { return m.name }
func (m modelFunc) WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
	return m.fn(ctx, call, next)
}

// ToolFunc returns a ToolWrapper named name that runs fn.
func ToolFunc(name string, fn func(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error)) ToolWrapper {
	return toolFunc{name, fn}
}

type toolFunc struct {
	name string
	fn   func(context.Context, *ToolCall, ToolHandler) (*ToolResult, error)
}

func (m toolFunc) Name() string { return m.name }
func (m toolFunc) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error) {
	return m.fn(ctx, call, next)
}

// BeforeTurnFunc returns a BeforeTurner named name that runs fn.
func BeforeTurnFunc(name string, fn func(ctx context.Context, t *Turn) error) BeforeTurner {
	return beforeFunc{name, fn}
}

type beforeFunc struct {
	name string
	fn   func(context.Context, *Turn) error
}

func (m beforeFunc) Name() string                                  { return m.name }
func (m beforeFunc) BeforeTurn(ctx context.Context, t *Turn) error { return m.fn(ctx, t) }

// AfterTurnFunc returns an AfterTurner named name that runs fn.
func AfterTurnFunc(name string, fn func(ctx context.Context, t *Turn) error) AfterTurner {
	return afterFunc{name, fn}
}

type afterFunc struct {
	name string
	fn   func(context.Context, *Turn) error
}

func (m afterFunc) Name() string                                 { return m.name }
func (m afterFunc) AfterTurn(ctx context.Context, t *Turn) error { return m.fn(ctx, t) }
