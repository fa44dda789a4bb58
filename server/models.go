package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/config"
)

// ModelRefusedError is a model field naming a model the operator neither
// declared nor allows requests to name.
type ModelRefusedError struct {
	// Model is the refused value.
	Model string
	// Names are the declared model names.
	Names []string
	// Patterns are the specs requests may name (request_models.allow).
	Patterns []string
}

func (e *ModelRefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model %q is not one this server offers: name one of its models (%s)", e.Model, orNone(e.Names))
	if len(e.Patterns) > 0 {
		fmt.Fprintf(&b, " or a spec matching %s", strings.Join(e.Patterns, ", "))
	}
	b.WriteString("; models are declared by the operator under models in trellis.yaml, and request_models.allow admits specs")
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Check reports whether a model field ("" : the default) may be used:
// nil for a declared name, a spec the operator wrote (Default, Named,
// Operator) or one AllowRequest admits, a *ModelRefusedError otherwise.
// request is true when only AllowRequest admits it: a request chose the
// spec, so its target, not the operator.
func (m Models) Check(model string) (request bool, err error) {
	model = strings.TrimSpace(model)
	if model == "" {
		return false, nil
	}
	if _, ok := m.Named[model]; ok {
		return false, nil
	}
	if model == m.Default || slices.Contains(m.Operator, model) {
		return false, nil
	}
	for _, spec := range m.Named {
		if spec == model {
			return false, nil
		}
	}
	for _, p := range m.AllowRequest {
		if config.MatchPattern(p, model) {
			return true, nil
		}
	}
	names := make([]string, 0, len(m.Named))
	for n := range m.Named {
		names = append(names, n)
	}
	slices.Sort(names)
	return false, &ModelRefusedError{Model: model, Names: names, Patterns: slices.Clone(m.AllowRequest)}
}

// checkAssistantConfig is api.API.CheckAssistantConfig: every model field
// of an assistant's config (config.ModelFields) must pass Models.Check.
// A server without registered models checks nothing.
func (s *Server) checkAssistantConfig(_ context.Context, cfg map[string]any) error {
	s.mu.Lock()
	m := s.models
	s.mu.Unlock()
	if m == nil {
		return nil
	}
	var errs []error
	config.ModelFields(cfg, "/config", func(ptr, value string) {
		if _, err := m.Check(value); err != nil {
			errs = append(errs, &FieldError{Pointer: ptr, Err: err})
		}
	})
	return errors.Join(errs...)
}

// FieldError is a refused value at a JSON pointer of a request body.
type FieldError struct {
	Pointer string
	Err     error
}

func (e *FieldError) Error() string { return e.Pointer + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// setModels records the models for checkAssistantConfig, with the specs
// the assistants of Config.Assistants (the operator's) name added to
// Models.Operator.
func (s *Server) setModels(m *Models) {
	m.Operator = slices.Clone(m.Operator)
	for _, a := range s.cfg.Assistants {
		var v any
		if json.Unmarshal(a.Config, &v) == nil {
			config.ModelFields(v, "", func(_, spec string) {
				if strings.Contains(spec, ":") && !slices.Contains(m.Operator, spec) {
					m.Operator = append(m.Operator, spec)
				}
			})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = m
}

// opaque wraps a model whose server a request chose: its errors say that
// the call failed and why in general terms (a timeout, a refused address,
// a limit), never what the server answered, so a client cannot read
// internal services' statuses or bodies through a run's error.
type opaque struct{ m llm.Model }

func (o opaque) Name() string { return o.m.Name() }

func (o opaque) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := o.m.Generate(ctx, req)
	return resp, o.hide(err)
}

func (o opaque) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for c, err := range o.m.Stream(ctx, req) {
			if !yield(c, o.hide(err)) {
				return
			}
		}
	}
}

func (o opaque) hide(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("the model call was cancelled: %w", context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the model call did not finish in time: %w", context.DeadlineExceeded)
	case strings.Contains(err.Error(), "netguard:"):
		return errors.New("the model's server address is not public, and this server does not call such addresses for a model a request named (request_models.allow_private)")
	}
	return errors.New("the model call failed; what its server answered is not shown, since a request chose the server")
}

// FieldPointer is the pointer the API answers the 422 at.
func (e *FieldError) FieldPointer() string { return e.Pointer }
