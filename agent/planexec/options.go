package planexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// Options are the agent's tunables as a configuration file writes them
// (trellis.yaml's config.configurable, as JSON): budgets, asking and
// checking, the phases' models and options, and the prompts. Apply sets
// them on a Config; fields left out keep the Config's values.
//
//	{"max_asks": 2, "step_rounds": 50, "time_budget": "10m", "token_budget": 200000,
//	 "on_plan_failure": "ask", "check_steps": true, "check_retries": 2, "replan_on_miss": true,
//	 "phases": {"plan": {"model": "strong", "temperature": 0.2}, "execute": {"model": "fast", "max_tokens": 2000},
//	            "judge": {"reasoning_effort": "low"}},
//	 "prompts": {"deliver": "Answer in French. Sum up {{len .Steps}} steps."},
//	 "system": "You work for the events team."}
type Options struct {
	System        string `json:"system,omitempty"`
	MaxAsks       *int   `json:"max_asks,omitempty"`
	RoundBudget   *int   `json:"round_budget,omitempty"`
	StepRounds    *int   `json:"step_rounds,omitempty"`
	TimeBudget    string `json:"time_budget,omitempty"` // a Go duration: "90s", "10m"
	TokenBudget   *int   `json:"token_budget,omitempty"`
	OnPlanFailure string `json:"on_plan_failure,omitempty"` // single_step, ask or fail
	CheckSteps    *bool  `json:"check_steps,omitempty"`
	CheckRetries  *int   `json:"check_retries,omitempty"`
	ReplanOnMiss  *bool  `json:"replan_on_miss,omitempty"`
	// KeepApproved is Config's.
	KeepApproved *bool `json:"keep_approved,omitempty"`
	// ContinueOnError and MaxParallel are Config's.
	ContinueOnError *bool `json:"continue_on_error,omitempty"`
	MaxParallel     *int  `json:"max_parallel,omitempty"`
	// Phases are by phase name: intent, ask, plan, execute, deliver,
	// judge.
	Phases map[string]llm.SettingsSpec `json:"phases,omitempty"`
	// History is the history policy of every phase (Config.History),
	// as {"policy": "token_budget", "max_tokens": 8000}; a summarising
	// policy without a model uses Config.Model.
	History *history.Spec `json:"history,omitempty"`
	// Prompts are by prompt name: intent, plan, deep_plan, step,
	// step_task, direct, replan, deliver, judge, unavailable (see
	// Prompts).
	Prompts map[string]string `json:"prompts,omitempty"`
}

// DecodeOptions reads Options from JSON, refusing unknown fields with an
// error that names them.
func DecodeOptions(raw []byte) (Options, error) {
	var o Options
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Options{}, fmt.Errorf("planexec options: %w (known: system, max_asks, round_budget, step_rounds, time_budget, token_budget, on_plan_failure, check_steps, check_retries, replan_on_miss, continue_on_error, max_parallel, phases, history, prompts)", err)
	}
	return o, nil
}

// Apply sets the options on cfg. resolve turns a phase's model name into a
// model (nil: naming a model is an error). Every problem is reported at
// once, each naming its field.
func (o Options) Apply(cfg *Config, resolve func(name string) (llm.Model, error)) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.System != "" {
		cfg.System = o.System
	}
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setInt(&cfg.MaxAsks, o.MaxAsks)
	setInt(&cfg.RoundBudget, o.RoundBudget)
	setInt(&cfg.StepRounds, o.StepRounds)
	setInt(&cfg.TokenBudget, o.TokenBudget)
	setInt(&cfg.CheckRetries, o.CheckRetries)
	setInt(&cfg.MaxParallel, o.MaxParallel)
	if o.ContinueOnError != nil {
		cfg.ContinueOnError = *o.ContinueOnError
	}
	if o.CheckSteps != nil {
		cfg.CheckSteps = *o.CheckSteps
	}
	if o.KeepApproved != nil {
		cfg.KeepApproved = *o.KeepApproved
	}
	if o.ReplanOnMiss != nil {
		cfg.ReplanOnMiss = *o.ReplanOnMiss
	}
	if o.TimeBudget != "" {
		d, err := time.ParseDuration(o.TimeBudget)
		if err != nil || d <= 0 {
			add("time_budget: %q is not a positive duration (write 90s, 10m, 1h)", o.TimeBudget)
		} else {
			cfg.TimeBudget = d
		}
	}
	switch o.OnPlanFailure {
	case "":
	case "single_step":
		cfg.OnPlanFailure = PlanFallbackSingleStep
	case string(PlanFallbackAsk), string(PlanFallbackFail):
		cfg.OnPlanFailure = PlanFailure(o.OnPlanFailure)
	default:
		add("on_plan_failure: %q is not single_step, ask or fail", o.OnPlanFailure)
	}
	if o.History != nil {
		if p, err := o.History.Build("history", cfg.Model, resolve); err != nil {
			errs = append(errs, err)
		} else {
			cfg.History = p
		}
	}
	phases := map[string]*llm.Settings{
		"intent": &cfg.Phases.Intent, "ask": &cfg.Phases.Ask, "plan": &cfg.Phases.Plan,
		"execute": &cfg.Phases.Execute, "deliver": &cfg.Phases.Deliver, "judge": &cfg.Phases.Judge,
	}
	for _, name := range slices.Sorted(maps.Keys(o.Phases)) {
		dst, ok := phases[name]
		if !ok {
			add("phases.%s: no such phase (the phases are %s)", name, strings.Join(slices.Sorted(maps.Keys(phases)), ", "))
			continue
		}
		s, err := o.Phases[name].Settings("phases."+name, resolve)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*dst = s
	}
	prompts := map[string]*string{
		"intent": &cfg.Prompts.Intent, "plan": &cfg.Prompts.Plan, "deep_plan": &cfg.Prompts.DeepPlan,
		"step": &cfg.Prompts.Step, "step_task": &cfg.Prompts.StepTask, "direct": &cfg.Prompts.Direct,
		"replan": &cfg.Prompts.Replan, "deliver": &cfg.Prompts.Deliver, "judge": &cfg.Prompts.Judge,
		"unavailable": &cfg.Prompts.Unavailable,
	}
	for _, name := range slices.Sorted(maps.Keys(o.Prompts)) {
		dst, ok := prompts[name]
		if !ok {
			add("prompts.%s: no such prompt (the prompts are %s)", name, strings.Join(slices.Sorted(maps.Keys(prompts)), ", "))
			continue
		}
		*dst = o.Prompts[name]
	}
	return errors.Join(errs...)
}
