package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/llm"
)

// The middleware an agent assistant can name (see package
// agent/middleware).
const (
	MiddlewarePII              = "pii"
	MiddlewareToolLimit        = "tool_limit"
	MiddlewareClearToolResults = "clear_tool_results"
	MiddlewareOffload          = "offload"
	MiddlewareToolSelector     = "tool_selector"
	MiddlewareDynamicPrompt    = "dynamic_prompt"
	MiddlewareRetry            = "retry"
	MiddlewareFallback         = "fallback"
)

// Bounds of a retry middleware's fields: an assistant's configuration
// may come from an API request, which must not hold a run for hours.
const (
	MaxRetryAttempts = 10
	MaxRetryBackoff  = 5 * time.Minute
)

// middlewareNames lists the names, for errors.
var middlewareNames = []string{MiddlewarePII, MiddlewareToolLimit, MiddlewareClearToolResults, MiddlewareOffload,
	MiddlewareToolSelector, MiddlewareDynamicPrompt, MiddlewareRetry, MiddlewareFallback}

// Middleware is one built-in middleware of an agent assistant, in
// trellis.yaml under assistants[].middleware (in order, the first
// outermost) and in config.configurable.middleware:
//
//	middleware:
//	  - {name: pii, strategy: mask, on: [input, tool_results]}
//	  - {name: tool_limit, tool: web_search, run_limit: 3, end_run: true}
//	  - {name: dynamic_prompt, template: 'You help {{context "user"}}.'}
//	  - {name: retry, max_attempts: 4, initial_backoff: 1s}
//	  - {name: fallback, models: [backup]}
//
// Only the fields of the named middleware may be set.
type Middleware struct {
	// Name is pii, tool_limit, clear_tool_results, offload,
	// tool_selector, dynamic_prompt, retry or fallback.
	Name string `json:"name" yaml:"name"`

	// Strategy (pii) is mask (default), hash or block.
	Strategy string `json:"strategy,omitempty" yaml:"strategy"`
	// On (pii) lists what is checked: input, output, tool_results (all
	// when empty).
	On []string `json:"on,omitempty" yaml:"on"`
	// Detectors (pii) names the built-in detectors: email, phone, card,
	// national_id (all of them when empty).
	Detectors []string `json:"detectors,omitempty" yaml:"detectors"`
	// Patterns (pii) are custom detectors added to those: kind → regular
	// expression.
	Patterns map[string]string `json:"patterns,omitempty" yaml:"patterns"`

	// Tool (tool_limit) is the tool limited ("" : each tool).
	Tool string `json:"tool,omitempty" yaml:"tool"`
	// RunLimit and ThreadLimit (tool_limit) bound the calls per run and
	// per thread.
	RunLimit    int `json:"run_limit,omitempty" yaml:"run_limit"`
	ThreadLimit int `json:"thread_limit,omitempty" yaml:"thread_limit"`
	// EndRun (tool_limit) ends the run when a limit is reached, with
	// EndMessage as its final reply (default: a sentence naming the
	// limit), instead of refusing the call and going on.
	EndRun     bool   `json:"end_run,omitempty" yaml:"end_run"`
	EndMessage string `json:"end_message,omitempty" yaml:"end_message"`

	// TriggerTokens (clear_tool_results, required) and Keep.
	TriggerTokens int `json:"trigger_tokens,omitempty" yaml:"trigger_tokens"`
	Keep          int `json:"keep,omitempty" yaml:"keep"`

	// MinRunes and Preview (offload).
	MinRunes int `json:"min_runes,omitempty" yaml:"min_runes"`
	Preview  int `json:"preview,omitempty" yaml:"preview"`

	// Model (tool_selector): a name under models or a spec ("" : the
	// assistant's model); MaxTools (required); Always lists tools always
	// offered.
	Model    string   `json:"model,omitempty" yaml:"model"`
	MaxTools int      `json:"max_tools,omitempty" yaml:"max_tools"`
	Always   []string `json:"always,omitempty" yaml:"always"`

	// Template (dynamic_prompt, required) is the system prompt as a Go
	// text/template; {{context "field"}} reads the run's context and
	// {{state "key"}} a state key (see middleware.PromptTemplate).
	Template string `json:"template,omitempty" yaml:"template"`

	// MaxAttempts (retry) counts the first attempt (default 3);
	// InitialBackoff and MaxBackoff are durations ("500ms", "30s").
	MaxAttempts    int    `json:"max_attempts,omitempty" yaml:"max_attempts"`
	InitialBackoff string `json:"initial_backoff,omitempty" yaml:"initial_backoff"`
	MaxBackoff     string `json:"max_backoff,omitempty" yaml:"max_backoff"`

	// Models (fallback, required) are the models tried in turn when the
	// assistant's fails: names under the operator's models only, so a
	// request cannot send its traffic to a model the operator did not
	// configure.
	Models []string `json:"models,omitempty" yaml:"models"`
}

// PII targets and detectors a Middleware may name.
var (
	PIITargets   = []string{"input", "output", "tool_results"}
	PIIDetectors = []string{"email", "phone", "card", "national_id"}
)

// Check reports an unknown name and fields that do not fit it, each as
// ".FIELD: ...".
func (m Middleware) Check() error {
	var errs []string
	bad := func(f, format string, args ...any) { errs = append(errs, "."+f+": "+fmt.Sprintf(format, args...)) }
	set := map[string]bool{
		"strategy": m.Strategy != "", "on": len(m.On) > 0, "detectors": len(m.Detectors) > 0, "patterns": len(m.Patterns) > 0,
		"tool": m.Tool != "", "run_limit": m.RunLimit != 0, "thread_limit": m.ThreadLimit != 0,
		"trigger_tokens": m.TriggerTokens != 0, "keep": m.Keep != 0,
		"min_runes": m.MinRunes != 0, "preview": m.Preview != 0,
		"model": m.Model != "", "max_tools": m.MaxTools != 0, "always": len(m.Always) > 0,
		"end_run": m.EndRun, "end_message": m.EndMessage != "", "template": m.Template != "",
		"max_attempts": m.MaxAttempts != 0, "initial_backoff": m.InitialBackoff != "", "max_backoff": m.MaxBackoff != "",
		"models": len(m.Models) > 0,
	}
	var fields []string
	switch m.Name {
	case MiddlewarePII:
		fields = []string{"strategy", "on", "detectors", "patterns"}
		if m.Strategy != "" && !slices.Contains([]string{"mask", "hash", "block"}, m.Strategy) {
			bad("strategy", "%q is not mask, hash or block", m.Strategy)
		}
		for _, o := range m.On {
			if !slices.Contains(PIITargets, o) {
				bad("on", "%q is not one of %s", o, strings.Join(PIITargets, ", "))
			}
		}
		for _, d := range m.Detectors {
			if !slices.Contains(PIIDetectors, d) {
				bad("detectors", "%q is not one of %s", d, strings.Join(PIIDetectors, ", "))
			}
		}
		for kind, p := range m.Patterns {
			if _, err := regexp.Compile(p); err != nil || kind == "" {
				bad("patterns."+kind, "not a usable regular expression: %v", err)
			}
		}
	case MiddlewareToolLimit:
		fields = []string{"tool", "run_limit", "thread_limit", "end_run", "end_message"}
		if m.EndMessage != "" && !m.EndRun {
			bad("end_message", "end_message is the final reply of a run end_run ends; set end_run: true")
		}
		if m.RunLimit < 0 || m.ThreadLimit < 0 || m.RunLimit+m.ThreadLimit == 0 {
			bad("run_limit", "give run_limit or thread_limit (or both), neither negative")
		}
	case MiddlewareClearToolResults:
		fields = []string{"trigger_tokens", "keep"}
		if m.TriggerTokens < 1 {
			bad("trigger_tokens", "clear_tool_results needs trigger_tokens of at least 1")
		}
	case MiddlewareOffload:
		fields = []string{"min_runes", "preview"}
		if m.MinRunes < 0 || m.Preview < 0 {
			bad("min_runes", "min_runes and preview must not be negative")
		}
	case MiddlewareToolSelector:
		fields = []string{"model", "max_tools", "always"}
		if m.MaxTools < 1 {
			bad("max_tools", "tool_selector needs max_tools of at least 1")
		}
	case MiddlewareDynamicPrompt:
		fields = []string{"template"}
		if _, err := middleware.PromptTemplate("", m.Template); err != nil {
			bad("template", "%v", err)
		}
	case MiddlewareRetry:
		fields = []string{"max_attempts", "initial_backoff", "max_backoff"}
		if m.MaxAttempts < 0 || m.MaxAttempts > MaxRetryAttempts {
			bad("max_attempts", "%d is not between 1 and %d; give the attempts counting the first (1: no retries), or leave it out for 3", m.MaxAttempts, MaxRetryAttempts)
		}
		for _, d := range []struct{ f, v string }{{"initial_backoff", m.InitialBackoff}, {"max_backoff", m.MaxBackoff}} {
			if _, err := m.duration(d.v); err != nil {
				bad(d.f, "%v", err)
			}
		}
	case MiddlewareFallback:
		fields = []string{"models"}
		if len(m.Models) == 0 {
			bad("models", "fallback needs models: names under models to try in turn")
		}
		for i, name := range m.Models {
			if name == "" || strings.Contains(name, ":") {
				bad(fmt.Sprintf("models[%d]", i), "%q is not a name under models; fallback models come only from the operator's models", name)
			}
		}
	default:
		bad("name", "%q is not one of %s", m.Name, strings.Join(middlewareNames, ", "))
	}
	if m.Name != "" && fields != nil {
		for _, f := range slices.Sorted(maps.Keys(set)) {
			if set[f] && !slices.Contains(fields, f) {
				bad(f, "%s does not take %s (it takes %s)", m.Name, f, strings.Join(fields, ", "))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// duration parses a retry duration ("" : 0, the default).
func (Middleware) duration(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxRetryBackoff {
		return 0, fmt.Errorf("%q is not a duration like 500ms or 30s, at most %s", v, MaxRetryBackoff)
	}
	return d, nil
}

// RetryPolicy returns the retry policy a retry middleware describes
// (call it after Check).
func (m Middleware) RetryPolicy() llm.RetryPolicy {
	initial, _ := m.duration(m.InitialBackoff)
	most, _ := m.duration(m.MaxBackoff)
	return llm.RetryPolicy{MaxAttempts: m.MaxAttempts, InitialBackoff: initial, MaxBackoff: most}
}
