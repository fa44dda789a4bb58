package config

import (
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/store"
)

// Store configures the long-term store.
type Store struct {
	// Index, when set, makes the store embed the items put into it and
	// answer the store API's query (and the agents' recall tool) by
	// similarity, as LangGraph's store index does:
	//
	//	store:
	//	  index: {embed: "openai:text-embedding-3-small", dims: 1536, fields: [text]}
	Index *StoreIndex `yaml:"index"`
}

// StoreIndex is the store's semantic index (LangGraph's {embed, dims,
// fields}).
type StoreIndex struct {
	// Embed is the embeddings model: a spec (openai:MODEL,
	// openai-compatible:URL#MODEL, ollama:MODEL) or a name under models.
	Embed string `yaml:"embed"`
	// Dims is the length of its vectors (1536 for
	// text-embedding-3-small; text-embedding-3 models shorten theirs to
	// it).
	Dims int `yaml:"dims"`
	// Fields are the paths of each item's value to embed ("$" for the
	// whole value, "a.b", "tags[*]"); empty means ["$"].
	Fields []string `yaml:"fields"`
}

func (s Store) check(models map[string]string) []error {
	ix := s.Index
	if ix == nil {
		return nil
	}
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("store.index.%s: %s", f, fmt.Sprintf(format, args...)))
	}
	switch {
	case ix.Embed == "":
		bad("embed", "required: the embeddings model, e.g. openai:text-embedding-3-small")
	case !strings.Contains(ix.Embed, ":"):
		if _, ok := models[ix.Embed]; !ok {
			bad("embed", "%q is neither a name under models nor a spec like openai:text-embedding-3-small", ix.Embed)
		}
	}
	if ix.Dims <= 0 {
		bad("dims", "required: the length of the model's vectors (1536 for text-embedding-3-small)")
	}
	for i, f := range ix.Fields {
		if err := store.ValidateFieldPath(f); err != nil {
			bad(fmt.Sprintf("fields[%d]", i), "%v", err)
		}
	}
	return errs
}
