package provider_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/provider"
)

func TestResolveEmbedder(t *testing.T) {
	var gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","model":"e","data":[{"object":"embedding","index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	}))
	defer srv.Close()
	e, err := provider.ResolveEmbedder("openai-compatible:"+srv.URL+"/v1#nomic-embed-text", 2)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 1 || vecs[0][0] != 1 || gotPath != "/v1/embeddings" || e.Dims() != 2 {
		t.Errorf("vectors %v from path %q, dims %d", vecs, gotPath, e.Dims())
	}
	if _, err := provider.ResolveEmbedder("anthropic:claude", 8); err == nil || !strings.Contains(err.Error(), "no embeddings API") {
		t.Errorf("anthropic: err = %v", err)
	}
	if _, err := provider.ResolveEmbedder("nope", 8); err == nil {
		t.Error("a bad spec resolved")
	}
}
