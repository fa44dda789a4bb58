// Package resolve turns model specs into models, with where each model's
// requests go, in the shape apps/terminal's Resolver takes: the trellis
// command, the example mains and a program of your own pass Provider to
// terminal.Command. Importing it links the vendor SDKs (through provider);
// only mains should.
package resolve

import (
	"os"
	"strings"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

// Provider resolves spec with provider.Resolve and returns the model with
// the base URL its requests go to.
func Provider(spec string) (llm.Model, string, error) {
	m, err := provider.Resolve(spec)
	if err != nil {
		return nil, "", err
	}
	return m, Endpoint(spec), nil
}

// Endpoint is the base URL spec's requests go to: the spec's own for
// OpenAI-compatible servers, else the vendor's (or its *_BASE_URL
// environment variable, which the SDKs honour).
func Endpoint(spec string) string {
	s, err := provider.Parse(spec)
	if err != nil {
		return ""
	}
	if s.BaseURL != "" {
		return s.BaseURL
	}
	env, def := "", ""
	switch strings.ToLower(s.Provider) {
	case "openai":
		env, def = "OPENAI_BASE_URL", "https://api.openai.com/v1"
	case "anthropic":
		env, def = "ANTHROPIC_BASE_URL", "https://api.anthropic.com"
	default:
		return ""
	}
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return v
	}
	return def
}
