package config

import (
	"fmt"
	"strings"
)

// History policies of the agent graph (see package llm/history).
const (
	// HistoryAll ("") sends the whole thread to the model.
	HistoryAll = ""
	// HistoryLastTurns sends the last Turns turns.
	HistoryLastTurns = "last_turns"
	// HistoryTokenBudget trims the thread to MaxTokens estimated tokens.
	HistoryTokenBudget = "token_budget"
	// HistorySummarize sends the last Turns turns and a running summary
	// of the earlier ones.
	HistorySummarize = "summarize"
)

// History is an agent assistant's message-history policy, in trellis.yaml
// under assistants[].history and in config.configurable.history:
//
//	history: {policy: summarize, turns: 6, max_turns: 12, model: cheap}
//
// The thread keeps every message; only what each model request carries
// changes.
type History struct {
	// Policy is "" (everything), last_turns, token_budget or summarize.
	Policy string `json:"policy,omitempty" yaml:"policy"`
	// Turns is how many of the latest turns are sent whole (last_turns:
	// required; summarize: 4 when 0).
	Turns int `json:"turns,omitempty" yaml:"turns"`
	// MaxTurns (summarize) is how many turns may follow the summary
	// before the oldest are folded into it (2×turns when 0).
	MaxTurns int `json:"max_turns,omitempty" yaml:"max_turns"`
	// MaxTokens (token_budget, required) is the budget, counted by the
	// estimate of llm/history (about four characters a token).
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens"`
	// Model (summarize) writes the summary: a name under models or a
	// spec; "" uses the assistant's model.
	Model string `json:"model,omitempty" yaml:"model"`
	// Prompt (summarize) replaces the summariser's default instructions.
	Prompt string `json:"prompt,omitempty" yaml:"prompt"`
}

// Check reports a policy it does not know and fields that do not fit the
// policy, each as "history.FIELD: ...".
func (h History) Check() error {
	var errs []string
	bad := func(f, format string, args ...any) {
		errs = append(errs, "history"+f+": "+fmt.Sprintf(format, args...))
	}
	switch h.Policy {
	case HistoryAll:
		if h != (History{}) {
			bad(".policy", "set a policy (last_turns, token_budget or summarize) for the other fields to apply")
		}
	case HistoryLastTurns:
		if h.Turns < 1 {
			bad(".turns", "last_turns needs turns of at least 1")
		}
	case HistoryTokenBudget:
		if h.MaxTokens < 1 {
			bad(".max_tokens", "token_budget needs max_tokens of at least 1")
		}
	case HistorySummarize:
		keep := h.Turns
		if keep == 0 {
			keep = 4
		}
		if h.Turns < 0 || h.MaxTurns < 0 || (h.MaxTurns > 0 && h.MaxTurns < keep) {
			bad(".max_turns", "summarize needs turns >= 1 (4 when left out) and max_turns >= turns (2×turns when left out)")
		}
	default:
		bad(".policy", "%q is not last_turns, token_budget or summarize", h.Policy)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
