package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/internal/sqlstore"
)

var _ store.Exporter = (*Store)(nil)

// ExportItems returns up to limit live items after after, ordered by
// namespace then key; see store.Exporter.
func (s *Store) ExportItems(ctx context.Context, after *store.Item, limit int) ([]*store.Item, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("store: export: limit %d is not positive", limit)
	}
	ns, key := []string{}, ""
	if after != nil {
		ns, key = after.Namespace, after.Key
	}
	rows, err := s.pool.Query(ctx, `SELECT namespace, key, value, created, updated, expires FROM store_items
WHERE (namespace, key) > ($1::text[], $2) AND (expires IS NULL OR expires > $3)
ORDER BY namespace, key LIMIT $4`, ns, key, time.Now(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: export: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.Item, error) {
		var it store.Item
		var value []byte
		var expires *time.Time
		if err := r.Scan(&it.Namespace, &it.Key, &value, &it.Created, &it.Updated, &expires); err != nil {
			return nil, err
		}
		it.Value = value
		if expires != nil {
			it.Expires = *expires
		}
		return &it, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: export: %w", err)
	}
	return out, nil
}

// ImportItems stores items with their times, leaving items the store has
// already as they are, in one transaction; see store.Exporter.
func (s *Store) ImportItems(ctx context.Context, items []*store.Item) (int, error) {
	if err := sqlstore.CheckImport(ctx, items); err != nil {
		return 0, err
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, it := range items {
			var expires *time.Time
			if !it.Expires.IsZero() {
				expires = &it.Expires
			}
			tag, err := tx.Exec(ctx, `INSERT INTO store_items (namespace, key, value, created, updated, expires)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (namespace, key) DO NOTHING`,
				it.Namespace, it.Key, string(it.Value), it.Created, it.Updated, expires)
			if err != nil {
				return fmt.Errorf("%s: %w", sqlstore.ItemName(it.Namespace, it.Key), err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: import: %w", err)
	}
	return n, nil
}
