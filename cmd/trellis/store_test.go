package main

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/config"
)

// store.index in trellis.yaml becomes the server's StoreIndex, its
// embedder resolved here; the assistant's history goes to its config.
func TestServerConfigStoreIndexAndHistory(t *testing.T) {
	parse := func(src string) *config.File {
		t.Helper()
		f, err := config.Parse([]byte(src), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	file := parse(`
models: {emb: "openai-compatible:http://127.0.0.1:1/v1#nomic-embed-text"}
store: {index: {embed: emb, dims: 8, fields: [text]}}
assistants:
  - {graph: agent, name: A, history: {policy: last_turns, turns: 3}}
`)
	cfg, _, err := serverConfig(serveFlags{}, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix := cfg.StoreIndex; ix == nil || ix.Embedder.Dims() != 8 || len(ix.Fields) != 1 || ix.Fields[0] != "text" {
		t.Fatalf("StoreIndex = %+v", cfg.StoreIndex)
	}
	if got := string(cfg.Assistants[0].Config); got != `{"configurable":{"history":{"policy":"last_turns","turns":3}}}` {
		t.Errorf("agent config %s", got)
	}
	_, _, err = serverConfig(serveFlags{}, parse(`store: {index: {embed: "anthropic:claude", dims: 8}}`), nil)
	if err == nil || !strings.Contains(err.Error(), "store.index.embed") || !strings.Contains(err.Error(), "no embeddings API") {
		t.Errorf("an Anthropic embedder: err = %v", err)
	}
}
