package provider

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Spec is a parsed model spec.
type Spec struct {
	// Provider is "openai", "anthropic" or "openai-compatible".
	Provider string
	// Model is the model name as the provider knows it.
	Model string
	// BaseURL is the server for "openai-compatible" specs (empty for the
	// others: their base URL comes from options or the environment).
	BaseURL string
}

// String formats the spec back into the form Parse reads.
func (s Spec) String() string {
	if s.BaseURL != "" {
		return s.Provider + ":" + s.BaseURL + "#" + s.Model
	}
	return s.Provider + ":" + s.Model
}

const specForms = `"openai:MODEL", "anthropic:MODEL", "openai-compatible:BASE_URL#MODEL" or "ollama:MODEL"`

// Parse reads a model spec:
//
//	openai:gpt-4o-mini
//	anthropic:claude-sonnet-4-5
//	openai-compatible:http://localhost:11434/v1#qwen2.5
//	ollama:qwen2.5     (openai-compatible at $OLLAMA_HOST, default http://localhost:11434/v1)
//
// It checks the form only; Resolve builds the model.
func Parse(spec string) (Spec, error) {
	name, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || rest == "" {
		return Spec{}, fmt.Errorf("provider: model spec %q: want %s", spec, specForms)
	}
	switch name {
	case "openai", "anthropic":
		return Spec{Provider: name, Model: rest}, nil
	case "ollama":
		return Spec{Provider: "openai-compatible", Model: rest, BaseURL: ollamaURL()}, nil
	case "openai-compatible":
		base, model, ok := strings.Cut(rest, "#")
		if !ok || model == "" {
			return Spec{}, fmt.Errorf("provider: model spec %q: an openai-compatible spec names the server and the model as BASE_URL#MODEL", spec)
		}
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Spec{}, fmt.Errorf("provider: model spec %q: %q is not an http(s) base URL", spec, base)
		}
		return Spec{Provider: name, Model: model, BaseURL: base}, nil
	default:
		return Spec{}, fmt.Errorf("provider: model spec %q: unknown provider %q; want %s", spec, name, specForms)
	}
}

// ollamaURL is Ollama's OpenAI-compatible endpoint: $OLLAMA_HOST (host:port
// or a URL) or the default local server.
func ollamaURL() string {
	h := strings.TrimSpace(os.Getenv("OLLAMA_HOST"))
	if h == "" {
		return "http://localhost:11434/v1"
	}
	if !strings.Contains(h, "://") {
		h = "http://" + h
	}
	return strings.TrimSuffix(h, "/") + "/v1"
}
