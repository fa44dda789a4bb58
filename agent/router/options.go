package router

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// Options are the router's tunables as a configuration file writes them
// (JSON, e.g. from trellis.yaml's config.configurable): the routing
// model's settings and the router's texts (system is plain text,
// prompts.system a template). Apply sets them on a Config;
// fields left out keep the Config's values.
//
//	{"system": "You route data questions.", "settings": {"model": "fast", "temperature": 0},
//	 "history": {"policy": "token_budget", "max_tokens": 8000},
//	 "prompts": {"unavailable": "Sorry, the data desk is offline; try again soon."}}
type Options struct {
	System   string           `json:"system,omitempty"`
	Settings llm.SettingsSpec `json:"settings,omitzero"`
	// History is the routing call's history policy (Config.History);
	// a summarising policy without a model uses the router's model.
	History *history.Spec `json:"history,omitempty"`
	Prompts struct {
		System      string `json:"system,omitempty"`
		Budget      string `json:"budget,omitempty"`
		Unavailable string `json:"unavailable,omitempty"`
	} `json:"prompts,omitzero"`
}

// DecodeOptions reads Options from JSON, refusing unknown fields.
func DecodeOptions(raw []byte) (Options, error) {
	var o Options
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Options{}, fmt.Errorf("router options: %w (known: system, settings, history, prompts.system, prompts.budget, prompts.unavailable)", err)
	}
	return o, nil
}

// Apply sets the options on cfg; resolve turns the settings' model name
// into a model (nil: naming one is an error). New checks the templates.
func (o Options) Apply(cfg *Config, resolve func(name string) (llm.Model, error)) error {
	var errs []error
	if o.System != "" {
		cfg.System = o.System
	}
	if o.Prompts.System != "" {
		cfg.Prompts.System = o.Prompts.System
	}
	if o.Prompts.Budget != "" {
		cfg.Prompts.Budget = o.Prompts.Budget
	}
	if o.Prompts.Unavailable != "" {
		cfg.Prompts.Unavailable = o.Prompts.Unavailable
	}
	if o.Settings != (llm.SettingsSpec{}) {
		s, err := o.Settings.Settings("settings", resolve)
		if err != nil {
			errs = append(errs, err)
		} else {
			cfg.Settings = s
		}
	}
	if o.History != nil {
		p, err := o.History.Build("history", cfg.Model, resolve)
		if err != nil {
			errs = append(errs, err)
		} else {
			cfg.History = p
		}
	}
	return errors.Join(errs...)
}
