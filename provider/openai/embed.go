package openai

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/trellis-agents/trellis/store"
)

// MaxEmbedBatch is the most texts one embeddings request carries; Embed
// splits larger batches (OpenAI accepts up to 2048 inputs a request).
const MaxEmbedBatch = 512

// Embedder is a store.Embedder on an OpenAI-compatible /embeddings
// endpoint (OpenAI's text-embedding-3-small, a local server's model, ...).
// It is safe for concurrent use.
type Embedder struct {
	m    *Model
	dims int
	svc  openai.EmbeddingService
}

var _ store.Embedder = (*Embedder)(nil)

// NewEmbedder returns an embedder for model with vectors of dims numbers.
// The options are New's (API key, base URL, headers, HTTP client, body
// limits). dims is sent as the request's "dimensions" (which
// text-embedding-3 models honour by shortening their vectors) and every
// vector returned must have that length.
func NewEmbedder(model string, dims int, opts ...Option) (*Embedder, error) {
	if dims <= 0 {
		return nil, fmt.Errorf("openai: embedder %s: dims is %d; give the vectors' length (1536 for text-embedding-3-small)", model, dims)
	}
	m, err := New(model, opts...)
	if err != nil {
		return nil, err
	}
	return &Embedder{m: m, dims: dims, svc: openai.NewEmbeddingService(m.opts...)}, nil
}

// Name is "provider:model", as for models.
func (e *Embedder) Name() string { return e.m.Name() }

// Dims returns the vectors' length.
func (e *Embedder) Dims() int { return e.dims }

// Embed returns one vector per text, in order. Failures are *llm.APIError
// values as for Generate (so llm.IsRetryable applies), or a plain error
// for a reply with the wrong number or length of vectors.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += MaxEmbedBatch {
		batch := texts[start:min(start+MaxEmbedBatch, len(texts))]
		vecs, err := e.embed(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	// An empty input is refused by OpenAI; a space embeds as nothing.
	in := make([]string, len(texts))
	for i, t := range texts {
		if t == "" {
			t = " "
		}
		in[i] = t
	}
	var raw *http.Response
	res, err := e.svc.New(ctx, openai.EmbeddingNewParams{
		Model:          openai.EmbeddingModel(e.m.model),
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: in},
		Dimensions:     openai.Int(int64(e.dims)),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}, option.WithResponseInto(&raw))
	if err != nil {
		return nil, e.m.callError(ctx, raw, err)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("openai: embedder %s: %d vectors for %d texts", e.Name(), len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		i := int(d.Index)
		if i < 0 || i >= len(texts) || out[i] != nil {
			return nil, fmt.Errorf("openai: embedder %s: the reply has a bad or repeated index %d", e.Name(), d.Index)
		}
		if len(d.Embedding) != e.dims {
			return nil, fmt.Errorf("openai: embedder %s: a vector of %d numbers; want %d (does the model support that many dimensions?)", e.Name(), len(d.Embedding), e.dims)
		}
		v := make([]float32, e.dims)
		for j, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("openai: embedder %s: vector %d holds %v", e.Name(), i, x)
			}
			v[j] = float32(x)
		}
		out[i] = v
	}
	return out, nil
}
