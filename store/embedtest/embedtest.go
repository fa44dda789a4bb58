// Package embedtest provides a deterministic store.Embedder for tests: a
// hashed bag of words, so texts sharing words are similar and texts sharing
// none are orthogonal (up to hash collisions), with no model and no
// network.
//
//	s := store.NewMemory(store.MemoryIndex(store.IndexConfig{
//		Embedder: embedtest.New(64), Fields: []string{"text"},
//	}))
package embedtest

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/trellis-agents/trellis/store"
)

// Hash is a bag-of-words embedder: every lower-cased word (a run of
// letters or digits) adds 1 to the dimension its FNV-1a hash picks, and
// the vector is scaled to length 1. It counts the texts it embeds and can
// be made to fail. It is safe for concurrent use.
type Hash struct {
	dims int

	mu    sync.Mutex
	texts []string
	fail  error
}

var _ store.Embedder = (*Hash)(nil)

// New returns a Hash embedder with dims dimensions (at least 1).
func New(dims int) *Hash { return &Hash{dims: max(dims, 1)} }

// Dims returns the vectors' length.
func (h *Hash) Dims() int { return h.dims }

// ErrInjected is the error FailWith makes Embed return when given nil.
var ErrInjected = errors.New("embedtest: injected embedder failure")

// FailWith makes every later Embed call return err (ErrInjected when
// err is nil); Recover undoes it.
func (h *Hash) FailWith(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = ErrInjected
	}
	h.fail = err
}

// Recover makes Embed succeed again after FailWith.
func (h *Hash) Recover() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail = nil
}

// Texts returns every text embedded so far, in order.
func (h *Hash) Texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.texts...)
}

// Embed returns one vector per text.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.fail != nil {
		err := h.fail
		h.mu.Unlock()
		return nil, err
	}
	h.texts = append(h.texts, texts...)
	h.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = Vector(t, h.dims)
	}
	return out, nil
}

// Vector is the embedding of one text in dims dimensions.
func Vector(text string, dims int) []float32 {
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		f := fnv.New32a()
		f.Write([]byte(w))
		v[f.Sum32()%uint32(dims)]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= s
		}
	}
	return v
}
