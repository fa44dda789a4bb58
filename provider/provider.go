// Package provider turns a model spec such as "openai:gpt-4o-mini" into an
// llm.Model backed by a vendor SDK.
//
// It is the only package that links the SDKs (through provider/openai and
// provider/anthropic), so only main packages — cmd/trellis and the examples
// — should import it; libraries and agents take an llm.Model. There is no
// registry and no init(): Resolve knows its providers explicitly.
package provider

import (
	"fmt"
	"net/http"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider/anthropic"
	"github.com/trellis-agents/trellis/provider/openai"
)

// Option adjusts how Resolve builds a model.
type Option func(*config)

type config struct {
	baseURL string
	apiKey  string
	client  *http.Client
	headers [][2]string
}

// WithAPIKey sets the API key (default: the provider's environment
// variable, OPENAI_API_KEY or ANTHROPIC_API_KEY).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sends requests to this server instead of the spec's (or
// the provider's default). The key from the environment is not sent to
// it (see openai.EnvKeyAllowed): pass WithAPIKey for its own.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHTTPClient sets the HTTP client requests go through.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.client = hc } }

// WithHeader adds a header to every request.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// Resolve builds the model a spec names (see Parse for the forms). The
// result makes one HTTP request per call: wrap it with llm.Retry,
// llm.WithTimeout and llm.Fallback for resilience.
func Resolve(spec string, opts ...Option) (llm.Model, error) {
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	switch s.Provider {
	case "anthropic":
		var o []anthropic.Option
		if c.baseURL != "" {
			o = append(o, anthropic.WithBaseURL(c.baseURL))
		}
		if c.apiKey != "" {
			o = append(o, anthropic.WithAPIKey(c.apiKey))
		}
		if c.client != nil {
			o = append(o, anthropic.WithHTTPClient(c.client))
		}
		for _, h := range c.headers {
			o = append(o, anthropic.WithHeader(h[0], h[1]))
		}
		m, err := anthropic.New(s.Model, o...)
		if err != nil {
			return nil, fmt.Errorf("provider: %s: %w", spec, err)
		}
		return m, nil
	default: // openai, openai-compatible
		m, err := openai.New(s.Model, c.openai(s)...)
		if err != nil {
			return nil, fmt.Errorf("provider: %s: %w", spec, err)
		}
		return m, nil
	}
}

// openai returns the openai options of spec s under c.
func (c config) openai(s Spec) []openai.Option {
	var o []openai.Option
	if s.BaseURL != "" {
		o = append(o, openai.WithBaseURL(s.BaseURL), openai.WithProviderName(s.Provider))
	}
	if c.baseURL != "" {
		o = append(o, openai.WithBaseURL(c.baseURL))
	}
	if c.apiKey != "" {
		o = append(o, openai.WithAPIKey(c.apiKey))
	}
	if c.client != nil {
		o = append(o, openai.WithHTTPClient(c.client))
	}
	for _, h := range c.headers {
		o = append(o, openai.WithHeader(h[0], h[1]))
	}
	return o
}
