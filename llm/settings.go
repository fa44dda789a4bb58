package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Settings are the model options of one phase of an agent (routing,
// planning, executing, delivering, judging...): which model answers and
// how. The zero Settings changes nothing: the agent's model answers with
// the provider's defaults.
//
// Providers differ in what they honour: provider/openai sends Temperature,
// TopP, MaxTokens and the reasoning effort; provider/anthropic sends
// MaxTokens and turns the effort into a thinking budget, and ignores
// Temperature and TopP (its API version refuses them).
type Settings struct {
	// Model answers the phase's requests instead of the agent's model
	// (nil: the agent's).
	Model Model
	// Temperature and TopP, when set, are sent with every request of the
	// phase.
	Temperature *float64
	TopP        *float64
	// MaxTokens, when positive, bounds each reply of the phase.
	MaxTokens int
	// ReasoningEffort is "low", "medium" or "high" (reasoning on at that
	// effort), "off" (reasoning off) or "" (what the agent asks for).
	ReasoningEffort string
}

// The reasoning efforts Settings accepts besides "".
const (
	EffortOff    = "off"
	EffortLow    = "low"
	EffortMedium = "medium"
	EffortHigh   = "high"
)

// IsZero reports whether s changes nothing.
func (s Settings) IsZero() bool {
	return s.Model == nil && s.Temperature == nil && s.TopP == nil && s.MaxTokens == 0 && s.ReasoningEffort == ""
}

// Or returns s with each field it leaves unset taken from def, so a
// phase's settings can fall back on another's.
func (s Settings) Or(def Settings) Settings {
	if s.Model == nil {
		s.Model = def.Model
	}
	if s.Temperature == nil {
		s.Temperature = def.Temperature
	}
	if s.TopP == nil {
		s.TopP = def.TopP
	}
	if s.MaxTokens == 0 {
		s.MaxTokens = def.MaxTokens
	}
	if s.ReasoningEffort == "" {
		s.ReasoningEffort = def.ReasoningEffort
	}
	return s
}

// Check reports every out-of-range value of s, naming the field after
// where (as "Phases.Plan").
func (s Settings) Check(where string) error {
	var errs []error
	if t := s.Temperature; t != nil && (*t < 0 || *t > 2) {
		errs = append(errs, fmt.Errorf("%s.Temperature is %v; use a value from 0 to 2", where, *t))
	}
	if p := s.TopP; p != nil && (*p <= 0 || *p > 1) {
		errs = append(errs, fmt.Errorf("%s.TopP is %v; use a value above 0 and at most 1", where, *p))
	}
	if s.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("%s.MaxTokens is %d; use a positive bound, or 0 for the provider's default", where, s.MaxTokens))
	}
	switch strings.ToLower(s.ReasoningEffort) {
	case "", EffortOff, EffortLow, EffortMedium, EffortHigh:
	default:
		errs = append(errs, fmt.Errorf("%s.ReasoningEffort is %q; use low, medium, high, off, or leave it empty", where, s.ReasoningEffort))
	}
	return errors.Join(errs...)
}

// Apply sets the options s sets on req, replacing what req had; the
// other options of req are kept. A reasoning effort turns reasoning on at
// that effort (keeping req's budget), "off" turns it off.
func (s Settings) Apply(req *Request) {
	if req == nil {
		return
	}
	if s.Temperature != nil {
		t := *s.Temperature
		req.Temperature = &t
	}
	if s.TopP != nil {
		p := *s.TopP
		req.TopP = &p
	}
	if s.MaxTokens > 0 {
		req.MaxTokens = s.MaxTokens
	}
	switch e := strings.ToLower(s.ReasoningEffort); e {
	case "":
	case EffortOff:
		req.Reasoning = &Reasoning{Enabled: false}
	default:
		r := Reasoning{Enabled: true, Effort: e}
		if req.Reasoning != nil {
			r.BudgetTokens = req.Reasoning.BudgetTokens
		}
		req.Reasoning = &r
	}
}

// ModelOr returns s.Model, or m when s names none.
func (s Settings) ModelOr(m Model) Model {
	if s.Model != nil {
		return s.Model
	}
	return m
}

// WithSettings returns a model that answers with s.ModelOr(m) and applies
// s to every request (on a copy: the caller's request is not changed). It
// returns s.ModelOr(m) itself when s sets no option.
func WithSettings(m Model, s Settings) Model {
	base := s.ModelOr(m)
	s.Model = nil
	if s.IsZero() || base == nil {
		return base
	}
	return &settingsModel{m: base, s: s}
}

type settingsModel struct {
	m Model
	s Settings
}

func (w *settingsModel) Name() string { return w.m.Name() }

// Limits passes the wrapped model's limits on (see LimitsOf).
func (w *settingsModel) Limits() Limits { return LimitsOf(w.m) }

func (w *settingsModel) apply(req *Request) *Request {
	if req == nil {
		return nil
	}
	c := *req
	w.s.Apply(&c)
	return &c
}

func (w *settingsModel) Generate(ctx context.Context, req *Request) (*Response, error) {
	return w.m.Generate(ctx, w.apply(req))
}

func (w *settingsModel) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return w.m.Stream(ctx, w.apply(req))
}

// SettingsSpec is Settings as a configuration file writes them (JSON or
// YAML): the model by name, resolved by the runner (a name under
// trellis.yaml's models, or a spec such as "openai:gpt-4o-mini").
type SettingsSpec struct {
	Model           string   `json:"model,omitempty" yaml:"model"`
	Temperature     *float64 `json:"temperature,omitempty" yaml:"temperature"`
	TopP            *float64 `json:"top_p,omitempty" yaml:"top_p"`
	MaxTokens       int      `json:"max_tokens,omitempty" yaml:"max_tokens"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty" yaml:"reasoning_effort"`
}

// Settings resolves the spec's model with resolve (not called when the
// spec names none) and checks the values, naming the fields after where.
func (s SettingsSpec) Settings(where string, resolve func(name string) (Model, error)) (Settings, error) {
	out := Settings{Temperature: s.Temperature, TopP: s.TopP, MaxTokens: s.MaxTokens, ReasoningEffort: s.ReasoningEffort}
	var errs []error
	if s.Model != "" {
		if resolve == nil {
			errs = append(errs, fmt.Errorf("%s.model: %q cannot be resolved here (no model resolver); leave it out to use the agent's model", where, s.Model))
		} else if m, err := resolve(s.Model); err != nil {
			errs = append(errs, fmt.Errorf("%s.model: %w", where, err))
		} else {
			out.Model = m
		}
	}
	if err := out.Check(where); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}
