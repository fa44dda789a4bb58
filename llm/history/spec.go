package history

import (
	"fmt"

	"github.com/trellis-agents/trellis/llm"
)

// The policy names a Spec accepts.
const (
	// SpecLastTurns is LastTurns{N: Turns}.
	SpecLastTurns = "last_turns"
	// SpecTokenBudget is Budget{Max: MaxTokens}.
	SpecTokenBudget = "token_budget"
	// SpecSummarize is Summarize{KeepTurns: Turns, MaxTurns: MaxTurns}.
	SpecSummarize = "summarize"
)

// Spec is a Policy as a configuration file writes it (JSON or YAML), the
// same object trellis.yaml takes under assistants[].history:
//
//	history: {policy: summarize, turns: 6, max_turns: 12, model: cheap}
//
// The summariser's model is named, and resolved by the runner (a name
// under trellis.yaml's models, or a spec such as "openai:gpt-4o-mini").
type Spec struct {
	// Policy is last_turns, token_budget or summarize.
	Policy string `json:"policy" yaml:"policy"`
	// Turns is how many of the latest turns are sent whole (last_turns:
	// required; summarize: 4 when 0).
	Turns int `json:"turns,omitempty" yaml:"turns"`
	// MaxTurns (summarize) is how many turns may follow the summary
	// before the oldest are folded into it (2×turns when 0).
	MaxTurns int `json:"max_turns,omitempty" yaml:"max_turns"`
	// MaxTokens (token_budget, required) is the budget, counted by
	// Estimate.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens"`
	// Model (summarize) writes the summary; "" uses the agent's model.
	Model string `json:"model,omitempty" yaml:"model"`
	// Prompt (summarize) replaces DefaultSummaryPrompt.
	Prompt string `json:"prompt,omitempty" yaml:"prompt"`
}

// Build returns the spec's policy, checked, naming fields after where (as
// "apps.builder.history"). A nil spec is a nil policy (the whole history).
// def is the summariser when the spec names no model; resolve turns a
// model name into a model (nil: naming one is an error).
func (s *Spec) Build(where string, def llm.Model, resolve func(name string) (llm.Model, error)) (Policy, error) {
	if s == nil {
		return nil, nil
	}
	var p Policy
	switch s.Policy {
	case SpecLastTurns:
		p = LastTurns{N: s.Turns}
	case SpecTokenBudget:
		p = Budget{Max: s.MaxTokens}
	case SpecSummarize:
		m := def
		if s.Model != "" {
			if resolve == nil {
				return nil, fmt.Errorf("%s.model: %q cannot be resolved here (no model resolver); leave it out to use the agent's model", where, s.Model)
			}
			r, err := resolve(s.Model)
			if err != nil {
				return nil, fmt.Errorf("%s.model: %w", where, err)
			}
			m = r
		}
		p = Summarize{Model: m, Prompt: s.Prompt, KeepTurns: s.Turns, MaxTurns: s.MaxTurns}
	default:
		return nil, fmt.Errorf("%s.policy: %q is not last_turns, token_budget or summarize", where, s.Policy)
	}
	if err := Validate(p); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return p, nil
}

// Validate calls p's Validate method when it has one (nil: no problem).
func Validate(p Policy) error {
	if v, ok := p.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
