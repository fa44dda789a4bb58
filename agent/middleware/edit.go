package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultClearedText replaces a cleared tool result unless
// ClearToolResultsConfig.Placeholder says otherwise.
const DefaultClearedText = "[This old tool result was cleared to save context. Call the tool again if you need it.]"

// ClearToolResultsConfig configures context editing.
type ClearToolResultsConfig struct {
	// Name names the middleware (default "clear_tool_results").
	Name string
	// TriggerTokens is the request size, in estimated tokens (a token per
	// four runes of text and tool-call arguments), above which old tool
	// results are cleared. Required.
	TriggerTokens int
	// Keep is how many of the newest tool results are never cleared
	// (default 3; negative: none kept).
	Keep int
	// Exclude names tools whose results are never cleared.
	Exclude []string
	// Placeholder replaces a cleared result (default DefaultClearedText).
	Placeholder string
}

// ClearToolResults returns a middleware that edits each model request
// whose estimated size is above TriggerTokens: it replaces the text of
// the oldest tool results with Placeholder, one at a time, until the
// request fits or only the Keep newest (and excluded) results are left.
// Messages are never removed, so every tool call keeps its result and the
// request stays valid; only the request changes, never the thread's
// state.
func ClearToolResults(cfg ClearToolResultsConfig) (Middleware, error) {
	if cfg.TriggerTokens <= 0 {
		return nil, fmt.Errorf("clear tool results: TriggerTokens is %d; give a positive size", cfg.TriggerTokens)
	}
	if cfg.Name == "" {
		cfg.Name = "clear_tool_results"
	}
	if cfg.Keep == 0 {
		cfg.Keep = 3
	}
	if cfg.Keep < 0 {
		cfg.Keep = 0
	}
	if cfg.Placeholder == "" {
		cfg.Placeholder = DefaultClearedText
	}
	return &clearResults{cfg}, nil
}

type clearResults struct{ cfg ClearToolResultsConfig }

func (c *clearResults) Name() string { return c.cfg.Name }

// EstimateTokens estimates the tokens of msgs: a token per four runes of
// text parts and tool-call arguments.
func EstimateTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += msgTokens(m)
	}
	return n
}

func msgTokens(m llm.Message) int {
	r := 0
	for _, p := range m.Parts {
		r += utf8.RuneCountInString(p.Text)
	}
	for _, c := range m.ToolCalls {
		r += utf8.RuneCountInString(c.Arguments) + len(c.Name)
	}
	return (r + 3) / 4
}

func (c *clearResults) WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
	total := EstimateTokens(call.Request.Messages)
	if total <= c.cfg.TriggerTokens {
		return next(ctx, call)
	}
	var results []int
	for i, m := range call.Request.Messages {
		if m.Role == llm.RoleTool && !slices.Contains(c.cfg.Exclude, m.ToolName) && m.Text() != c.cfg.Placeholder {
			results = append(results, i)
		}
	}
	clearable := results[:max(0, len(results)-c.cfg.Keep)]
	if len(clearable) == 0 {
		return next(ctx, call)
	}
	req := call.Request.Clone()
	for _, i := range clearable {
		if total <= c.cfg.TriggerTokens {
			break
		}
		m := req.Messages[i]
		before := msgTokens(m)
		m.Parts = []llm.Part{llm.Text(c.cfg.Placeholder)}
		req.Messages[i] = m
		total += msgTokens(m) - before
	}
	call.Request = req
	return next(ctx, call)
}

// PromptFunc returns the system prompt for one model call, from the run's
// context (graph.RunContext) and state; "" leaves the request's prompt.
type PromptFunc func(ctx context.Context, s graph.State) (string, error)

// DynamicPrompt returns a middleware that sets each request's system
// prompt from fn: it replaces the request's first message when that is a
// system message, and puts a system message first otherwise.
func DynamicPrompt(name string, fn PromptFunc) (Middleware, error) {
	if fn == nil {
		return nil, errors.New("dynamic prompt: the prompt function is nil")
	}
	if name == "" {
		name = "dynamic_prompt"
	}
	return ModelFunc(name, func(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
		text, err := fn(ctx, call.State)
		if err != nil {
			return nil, fmt.Errorf("dynamic prompt: %w", err)
		}
		if text == "" {
			return next(ctx, call)
		}
		req := call.Request.Clone()
		if len(req.Messages) > 0 && req.Messages[0].Role == llm.RoleSystem {
			m := req.Messages[0]
			m.Parts = []llm.Part{llm.Text(text)}
			req.Messages[0] = m
		} else {
			req.Messages = slices.Insert(req.Messages, 0, llm.System(text))
		}
		call.Request = req
		return next(ctx, call)
	}), nil
}

// PromptTemplate returns a DynamicPrompt whose prompt is a text/template
// (name "" : "dynamic_prompt"), executed for each model call. The template
// reads the run's context and state through two functions:
//
//	You help {{context "user_name"}}. The plan so far: {{state "plan"}}
//
// context returns a field of the run's context (graph.WithRunContext, a
// JSON object) and state the value of a state key, each decoded from
// JSON ("" when the run has no such field or the key is unset). A
// template that does not parse is an error here; one that fails to
// execute fails the call, naming the middleware.
func PromptTemplate(name, text string) (Middleware, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("dynamic prompt: the template is empty")
	}
	funcs := template.FuncMap{
		"context": func(string) any { return nil },
		"state":   func(string) any { return nil },
	}
	base, err := template.New("prompt").Option("missingkey=zero").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("dynamic prompt: the template does not parse: %w", err)
	}
	return DynamicPrompt(name, func(ctx context.Context, s graph.State) (string, error) {
		var run map[string]any
		if v, err := graph.RunContext[map[string]any](ctx); err == nil {
			run = v
		} else if !errors.Is(err, graph.ErrNoRunContext) {
			return "", err
		}
		var stateErr error
		// Each call executes its own clone, whose functions read this
		// call's context and state.
		t, err := base.Clone()
		if err != nil {
			return "", err
		}
		t.Funcs(template.FuncMap{
			"context": func(field string) any {
				if v, ok := run[field]; ok && v != nil {
					return v
				}
				return ""
			},
			"state": func(key string) any {
				raw, ok, err := s.ValueJSON(key)
				if err != nil || !ok {
					if err != nil && stateErr == nil {
						stateErr = fmt.Errorf("state key %q: %w", key, err)
					}
					return ""
				}
				var v any
				if err := json.Unmarshal(raw, &v); err != nil && stateErr == nil {
					stateErr = fmt.Errorf("state key %q: %w", key, err)
				}
				if v == nil {
					return ""
				}
				return v
			},
		})
		var b strings.Builder
		if err := t.Execute(&b, nil); err != nil {
			return "", fmt.Errorf("the template failed: %w", err)
		}
		if stateErr != nil {
			return "", stateErr
		}
		return b.String(), nil
	})
}
