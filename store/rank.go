package store

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"strings"
)

// MaxRanked is the most items (Offset+Limit) a semantic Search ranks: the
// ranking keeps that many candidates in memory while it reads the rest.
const MaxRanked = 10000

// CheckRanked reports a semantic query whose offset and limit together
// exceed MaxRanked. limit is the effective limit (10 for 0).
func CheckRanked(offset, limit int) error {
	if offset+limit > MaxRanked {
		return fmt.Errorf("store: search: a query ranks at most %d items, and offset %d + limit %d is more; narrow the prefix or filter instead of paging deeper", MaxRanked, offset, limit)
	}
	return nil
}

// Scored is a candidate of a semantic search.
type Scored struct {
	Namespace []string
	Key       string
	Score     float64
}

// better orders candidates best first: higher score, then namespace, then
// key (the order of a plain Search), so equal scores rank deterministically.
func better(a, b *Scored) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return cmp.Or(slices.Compare(a.Namespace, b.Namespace), strings.Compare(a.Key, b.Key)) < 0
}

// TopK keeps the k best candidates offered to it, in O(k) memory, for
// backends that stream candidates. The zero value is not usable; call
// NewTopK.
type TopK struct {
	k int
	h topHeap
}

// NewTopK returns a TopK keeping k candidates.
func NewTopK(k int) *TopK { return &TopK{k: k} }

// Offer considers a candidate. namespace is copied only when it is kept, so
// callers may reuse its memory.
func (t *TopK) Offer(namespace []string, key string, score float64) {
	c := Scored{Namespace: namespace, Key: key, Score: score}
	if t.k <= 0 {
		return
	}
	if len(t.h) == t.k {
		if !better(&c, &t.h[0]) {
			return
		}
		c.Namespace = slices.Clone(namespace)
		t.h[0] = c
		heap.Fix(&t.h, 0)
		return
	}
	c.Namespace = slices.Clone(namespace)
	heap.Push(&t.h, c)
}

// Best returns the kept candidates best first, skipping the first offset.
func (t *TopK) Best(offset int) []Scored {
	out := slices.Clone([]Scored(t.h))
	slices.SortFunc(out, func(a, b Scored) int {
		if better(&a, &b) {
			return -1
		}
		if better(&b, &a) {
			return 1
		}
		return 0
	})
	if offset >= len(out) {
		return nil
	}
	return out[offset:]
}

// topHeap is a min-heap by goodness: the root is the worst kept candidate.
type topHeap []Scored

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return better(&h[j], &h[i]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(Scored)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// BestScore returns the best similarity (Dot) of the normalized query q
// to any of the normalized vecs, and false when vecs is empty. A vector of another length than q is an error
// naming the item: the index was built with another embedder.
func BestScore(q []float32, vecs [][]float32, namespace []string, key string) (float64, bool, error) {
	best, ok := 0.0, false
	for _, v := range vecs {
		if len(v) != len(q) {
			return 0, false, fmt.Errorf("store: search: item %s has a vector of %d numbers, the query %d: it was embedded with another embedder; put it again to re-embed it", strings.Join(namespace, "/")+"/"+key, len(v), len(q))
		}
		if s := Dot(q, v); !ok || s > best {
			best, ok = s, true
		}
	}
	return best, ok, nil
}
