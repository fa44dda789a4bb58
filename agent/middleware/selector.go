package middleware

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// DefaultSelectorPrompt instructs the selector model unless
// ToolSelectorConfig.Prompt replaces it.
const DefaultSelectorPrompt = "You choose the tools an assistant needs for the user's latest request. " +
	"Answer with a JSON object {\"tools\": [names]} naming at most %d of the tools below, most useful first. Tools:\n"

// ToolSelectorConfig configures the LLM tool selector.
type ToolSelectorConfig struct {
	// Name names the middleware (default "tool_selector").
	Name string
	// Model is the (cheap) model that chooses. Required.
	Model llm.Model
	// MaxTools is the most tools a request keeps besides AlwaysInclude.
	// Required.
	MaxTools int
	// AlwaysInclude names tools that are always offered when the agent
	// has them (a stop tool, say).
	AlwaysInclude []string
	// Prompt replaces DefaultSelectorPrompt; a %d in it is MaxTools.
	Prompt string
}

// ToolSelector returns a middleware that narrows the tools of a request
// that offers more than MaxTools: it asks Model (with Generate, so its
// reply is not streamed; its usage is recorded) which tools the latest
// user message needs, and offers only those, in the request's order,
// plus AlwaysInclude. Names the selector invents are ignored; a selector
// error fails the call.
func ToolSelector(cfg ToolSelectorConfig) (Middleware, error) {
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("tool selector: Model is nil"))
	}
	if cfg.MaxTools <= 0 {
		errs = append(errs, fmt.Errorf("tool selector: MaxTools is %d; give a positive number", cfg.MaxTools))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "tool_selector"
	}
	if cfg.Prompt == "" {
		cfg.Prompt = DefaultSelectorPrompt
	}
	return &selector{cfg}, nil
}

type selector struct{ cfg ToolSelectorConfig }

func (s *selector) Name() string { return s.cfg.Name }

type selection struct {
	Tools []string `json:"tools"`
}

func (s *selector) WrapModel(ctx context.Context, call *ModelCall, next ModelHandler) (*llm.Response, error) {
	req := call.Request
	if len(req.Tools) <= s.cfg.MaxTools {
		return next(ctx, call)
	}
	var b strings.Builder
	prompt := s.cfg.Prompt
	if strings.Contains(prompt, "%d") {
		prompt = fmt.Sprintf(prompt, s.cfg.MaxTools)
	}
	b.WriteString(prompt)
	for _, t := range req.Tools {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, t.Description)
	}
	user := ""
	for _, m := range slices.Backward(req.Messages) {
		if m.Role == llm.RoleUser {
			user = m.Text()
			break
		}
	}
	resp, err := s.cfg.Model.Generate(ctx, &llm.Request{
		Messages:       []llm.Message{llm.System(b.String()), llm.User(user)},
		ResponseFormat: &llm.ResponseFormat{Name: "tool_selection"},
	})
	if err != nil {
		return nil, fmt.Errorf("tool selector: model %s: %w", s.cfg.Model.Name(), err)
	}
	graph.RecordUsage(ctx, resp.Usage)
	sel, err := llm.Decode[selection](resp.Message.Text())
	if err != nil {
		return nil, fmt.Errorf("tool selector: the selector's reply does not decode: %w", err)
	}
	keep := map[string]bool{}
	n := 0
	for _, name := range sel.Tools {
		if n < s.cfg.MaxTools && !keep[name] && slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == name }) {
			keep[name] = true
			n++
		}
	}
	for _, name := range s.cfg.AlwaysInclude {
		keep[name] = true
	}
	if req.ToolChoice.Mode == llm.ToolChoiceTool {
		keep[req.ToolChoice.Name] = true
	}
	out := req.Clone()
	out.Tools = slices.DeleteFunc(out.Tools, func(t llm.ToolSpec) bool { return !keep[t.Name] })
	call.Request = out
	return next(ctx, call)
}
