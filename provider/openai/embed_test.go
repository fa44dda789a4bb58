package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func newEmbedder(t *testing.T, s *fakeServer, dims int) *Embedder {
	t.Helper()
	e, err := NewEmbedder(fixtureModel, dims, WithBaseURL(s.URL+"/v1"), WithAPIKey("sk-fixture"), WithHTTPClient(s.Client()))
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// The request is OpenAI's /embeddings body (floats, the dimensions, an
// empty text sent as a space) and the reply's vectors come back in input
// order whatever order the server lists them in.
func TestEmbedWire(t *testing.T) {
	s := newServer(t, serveJSON(200, fixture(t, "embeddings/response.json"), nil))
	e := newEmbedder(t, s, 3)
	got, err := e.Embed(context.Background(), []string{"likes tea", ""})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float32{{0.6, 0, 0.8}, {0, 1, 0}}, got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
	req := s.last(t)
	if req.method != http.MethodPost || req.path != "/v1/embeddings" || req.header.Get("Authorization") != "Bearer sk-fixture" {
		t.Errorf("request %s %s auth %q", req.method, req.path, req.header.Get("Authorization"))
	}
	var gotBody, wantBody any
	if err := json.Unmarshal(req.body, &gotBody); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fixture(t, "embeddings/request.json"), &wantBody); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBody, gotBody); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	if e.Dims() != 3 || e.Name() != "openai:"+fixtureModel {
		t.Errorf("Dims %d, Name %q", e.Dims(), e.Name())
	}
}

// A large batch is split into requests of MaxEmbedBatch texts.
func TestEmbedBatches(t *testing.T) {
	var s *fakeServer
	s = newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		var body struct {
			Input []string `json:"input"`
		}
		_ = json.Unmarshal(s.last(t).body, &body) // the recorder read the body
		var data []string
		for i := range body.Input {
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[1,%d]}`, i, len(body.Input)))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":"m","data":[%s],"usage":{"prompt_tokens":1,"total_tokens":1}}`, strings.Join(data, ","))
	})
	e := newEmbedder(t, s, 2)
	texts := make([]string, MaxEmbedBatch+3)
	for i := range texts {
		texts[i] = fmt.Sprint("t", i)
	}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) || s.count() != 2 || got[0][1] != MaxEmbedBatch || got[len(got)-1][1] != 3 {
		t.Errorf("%d vectors in %d requests; first batch size %v, last %v", len(got), s.count(), got[0][1], got[len(got)-1][1])
	}
}

func TestEmbedErrors(t *testing.T) {
	s := newServer(t, serveJSON(429, fixture(t, "error_429/body.json"), map[string]string{"Retry-After": "2"}))
	_, err := newEmbedder(t, s, 3).Embed(context.Background(), []string{"x"})
	var api *llm.APIError
	if !errors.As(err, &api) || api.StatusCode != 429 || !llm.IsRetryable(err) {
		t.Errorf("429: err = %v; want a retryable *llm.APIError with status 429", err)
	}
	short := newServer(t, serveJSON(200, fixture(t, "embeddings/response.json"), nil))
	if _, err := newEmbedder(t, short, 4).Embed(context.Background(), []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "want 4") {
		t.Errorf("wrong length: err = %v; want it to name the expected length", err)
	}
	if _, err := newEmbedder(t, short, 3).Embed(context.Background(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "2 vectors for 1 texts") {
		t.Errorf("wrong count: err = %v", err)
	}
	if _, err := NewEmbedder(fixtureModel, 0, WithAPIKey("k")); err == nil {
		t.Error("NewEmbedder with 0 dims succeeded")
	}
}
