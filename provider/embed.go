package provider

import (
	"fmt"

	"github.com/trellis-agents/trellis/provider/openai"
	"github.com/trellis-agents/trellis/store"
)

// ResolveEmbedder builds the embedder a spec names, with vectors of dims
// numbers: "openai:text-embedding-3-small", an openai-compatible or ollama
// spec (see Parse). Anthropic has no embeddings API.
func ResolveEmbedder(spec string, dims int, opts ...Option) (store.Embedder, error) {
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	if s.Provider == "anthropic" {
		return nil, fmt.Errorf("provider: embedder %s: Anthropic has no embeddings API; use an openai, openai-compatible or ollama spec", spec)
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	e, err := openai.NewEmbedder(s.Model, dims, c.openai(s)...)
	if err != nil {
		return nil, fmt.Errorf("provider: embedder %s: %w", spec, err)
	}
	return e, nil
}
