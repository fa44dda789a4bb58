package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
	"github.com/trellis-agents/trellis/store"
)

// putVectors replaces the vectors of an item inside Put's transaction. It
// always deletes the old ones, so an item replaced without an index (or by
// a store opened without one) is not found by stale vectors.
func putVectors(ctx context.Context, tx *sql.Tx, ns []byte, key string, vecs []store.Vector) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM store_vectors WHERE ns = ? AND key = ?`, ns, key); err != nil {
		return fmt.Errorf("delete old vectors: %w", err)
	}
	for i, v := range vecs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO store_vectors (ns, key, i, path, vec) VALUES (?, ?, ?, ?, ?)`,
			ns, key, i, v.Path, store.EncodeVector(v.Vector)); err != nil {
			return fmt.Errorf("insert vector %d: %w", i, err)
		}
	}
	return nil
}

// searchText answers a semantic Search: it streams the vectors of the live
// items under prefix in key order (an item's vectors are adjacent), scores
// each item by its best vector, keeps the best Offset+limit in a heap, and
// then reads those items.
func (s *Store) searchText(ctx context.Context, prefix []string, q store.Query, filter map[string]any, limit int) ([]*store.Item, error) {
	qv, err := s.index.EmbedQuery(ctx, q.Text)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	where, args := liveInPrefix("i.", prefix, unixNano(s.now()))
	cols := `v.ns, v.key, v.vec`
	if len(filter) > 0 {
		cols += `, i.value`
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT `+cols+` FROM store_vectors v
		JOIN store_items i ON i.ns = v.ns AND i.key = v.key`+where+` ORDER BY v.ns, v.key, v.i`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	defer rows.Close()
	top := store.NewTopK(q.Offset + limit)
	var (
		// RawBytes point into the driver's row: no copy per vector.
		rawNS, rawKey, rawVec, value sql.RawBytes
		curNS                        []byte
		curKey                       string
		best                         float64
		have, skip                   bool
		vec                          []float32
	)
	flush := func() error {
		if !have || skip {
			return nil
		}
		namespace, err := decodeNamespace(curNS)
		if err != nil {
			return err
		}
		top.Offer(namespace, curKey, best)
		return nil
	}
	dst := []any{&rawNS, &rawKey, &rawVec}
	if len(filter) > 0 {
		dst = append(dst, &value)
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		if !have || string(rawKey) != curKey || !bytes.Equal(rawNS, curNS) {
			if err := flush(); err != nil {
				return nil, fmt.Errorf("store: search %q: %w", prefix, err)
			}
			curNS, curKey, have, skip = append(curNS[:0], rawNS...), string(rawKey), true, false
			best = -2
			if len(filter) > 0 {
				if err := store.CheckValueSize("read", nil, curKey, len(value), s.maxBytes); err != nil {
					return nil, err
				}
				skip = !jsonmatch.Matches([]byte(value), filter)
			}
		}
		if skip {
			continue
		}
		if vec, err = store.DecodeVector(vec, rawVec); err != nil {
			return nil, err
		}
		score, _, err := store.BestScore(qv, [][]float32{vec}, nil, curKey)
		if err != nil {
			return nil, err
		}
		best = max(best, score)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("store: search %q: %w", prefix, err)
	}
	rows.Close()

	out := []*store.Item{}
	for _, c := range top.Best(q.Offset) {
		it, _, err := scanItem(s.db.Read.QueryRowContext(ctx, qItem+` WHERE ns = ? AND key = ?`, encodeNamespace(c.Namespace), c.Key))
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted since it was ranked
		}
		if err != nil {
			return nil, fmt.Errorf("store: search %q: %w", prefix, err)
		}
		if err := store.CheckValueSize("read", it.Namespace, it.Key, len(it.Value), s.maxBytes); err != nil {
			return nil, err
		}
		score := c.Score
		it.Score = &score
		out = append(out, it)
	}
	return out, nil
}
