package agentgraph

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/config"
)

// Middleware builds the middleware chain an assistant's configuration
// names (config.configurable.middleware), in order, for an app's agents
// (apps.Env.Middleware). model is the assistant's; models resolves the
// names under models. Errors name the field ("middleware[1].models[0]:
// ...").
func Middleware(refs []config.Middleware, model llm.Model, models ModelFunc) ([]middleware.Middleware, error) {
	return middlewareOf(refs, model, models)
}

// middlewareOf builds an assistant's middleware chain from its
// configuration, in order. A tool selector without a model uses the
// agent's.
func middlewareOf(refs []config.Middleware, model llm.Model, models ModelFunc) ([]middleware.Middleware, error) {
	var out []middleware.Middleware
	for i, ref := range refs {
		m, err := buildMiddleware(ref, model, models)
		if err != nil {
			return nil, fmt.Errorf("middleware[%d]%v", i, err)
		}
		out = append(out, m)
	}
	if _, err := middleware.NewChain(out...); err != nil {
		return nil, fmt.Errorf("middleware: %v", err)
	}
	return out, nil
}

func buildMiddleware(ref config.Middleware, model llm.Model, models ModelFunc) (middleware.Middleware, error) {
	if err := ref.Check(); err != nil {
		return nil, err
	}
	wrap := func(m middleware.Middleware, err error) (middleware.Middleware, error) {
		if err != nil {
			return nil, fmt.Errorf(": %v", err)
		}
		return m, nil
	}
	switch ref.Name {
	case config.MiddlewarePII:
		cfg := middleware.PIIConfig{Strategy: middleware.Strategy(ref.Strategy)}
		for _, o := range ref.On {
			switch o {
			case "input":
				cfg.Input = true
			case "output":
				cfg.Output = true
			case "tool_results":
				cfg.ToolResults = true
			}
		}
		builtin := map[string]func() middleware.Detector{
			"email": middleware.Email, "phone": middleware.Phone, "card": middleware.Card, "national_id": middleware.NationalID,
		}
		names := ref.Detectors
		if len(names) == 0 {
			names = config.PIIDetectors
		}
		// Cards and IDs are tried before phones, which would otherwise
		// claim their digits.
		for _, name := range []string{"email", "card", "national_id", "phone"} {
			if slices.Contains(names, name) {
				cfg.Detectors = append(cfg.Detectors, builtin[name]())
			}
		}
		for _, kind := range slices.Sorted(maps.Keys(ref.Patterns)) {
			cfg.Detectors = append(cfg.Detectors, middleware.RegexDetector(kind, regexp.MustCompile(ref.Patterns[kind])))
		}
		return wrap(middleware.PII(cfg))
	case config.MiddlewareToolLimit:
		return wrap(middleware.ToolLimit(middleware.ToolLimitConfig{Tool: ref.Tool, RunLimit: ref.RunLimit, ThreadLimit: ref.ThreadLimit,
			EndRun: ref.EndRun, EndMessage: ref.EndMessage}))
	case config.MiddlewareDynamicPrompt:
		return wrap(middleware.PromptTemplate("", ref.Template))
	case config.MiddlewareRetry:
		return middleware.Retry(ref.RetryPolicy()), nil
	case config.MiddlewareFallback:
		var backups []llm.Model
		for i, name := range ref.Models {
			m, err := models(name)
			if err != nil {
				return nil, fmt.Errorf(".models[%d]: %v", i, err)
			}
			if m == nil {
				return nil, fmt.Errorf(".models[%d]: %q names no model", i, name)
			}
			backups = append(backups, m)
		}
		return wrap(middleware.Fallback(nil, backups...))
	case config.MiddlewareClearToolResults:
		return wrap(middleware.ClearToolResults(middleware.ClearToolResultsConfig{TriggerTokens: ref.TriggerTokens, Keep: ref.Keep}))
	case config.MiddlewareOffload:
		return wrap(middleware.Offload(middleware.OffloadConfig{MinRunes: ref.MinRunes, Preview: ref.Preview}))
	case config.MiddlewareToolSelector:
		sel := model
		if ref.Model != "" {
			m, err := models(ref.Model)
			if err != nil {
				return nil, fmt.Errorf(".model: %v", err)
			}
			if m != nil {
				sel = m
			}
		}
		return wrap(middleware.ToolSelector(middleware.ToolSelectorConfig{Model: sel, MaxTools: ref.MaxTools, AlwaysInclude: ref.Always}))
	}
	return nil, fmt.Errorf(".name: %q is not a built-in middleware", ref.Name)
}
