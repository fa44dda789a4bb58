package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/trellis-agents/trellis/store"
)

// searchText answers a semantic Search: it streams the vectors of the live
// items the where clause selects, in key order (an item's vectors are
// adjacent), scores each item by its best vector, keeps the best
// Offset+Limit in a heap, and then reads those items.
func (s *Store) searchText(ctx context.Context, prefix []string, q store.Query, w *where) ([]*store.Item, error) {
	qv, err := s.index.EmbedQuery(ctx, q.Text)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	limit := cmp.Or(q.Limit, 10)
	// USING merges namespace and key, so the where clause's unqualified
	// names still mean the item's.
	rows, err := s.pool.Query(ctx, `SELECT namespace, key, v.vec FROM store_items JOIN store_vectors v USING (namespace, key)`+
		w.String()+` ORDER BY namespace, key, v.i`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	defer rows.Close()
	top := store.NewTopK(q.Offset + limit)
	var (
		cur, namespace []string
		curKey, key    string
		raw            []byte
		vec            []float32
		best           float64
		have           bool
	)
	for rows.Next() {
		if err := rows.Scan(&namespace, &key, &raw); err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		if !have || key != curKey || !slices.Equal(namespace, cur) {
			if have {
				top.Offer(cur, curKey, best)
			}
			cur, curKey, have, best = slices.Clone(namespace), key, true, -2
		}
		if vec, err = store.DecodeVector(vec, raw); err != nil {
			return nil, err
		}
		score, _, err := store.BestScore(qv, [][]float32{vec}, namespace, key)
		if err != nil {
			return nil, err
		}
		best = max(best, score)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	if have {
		top.Offer(cur, curKey, best)
	}

	out := []*store.Item{}
	for _, c := range top.Best(q.Offset) {
		it, err := s.Get(ctx, c.Namespace, c.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted or expired since it was ranked
		}
		if err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		score := c.Score
		it.Score = &score
		out = append(out, it)
	}
	return out, nil
}
