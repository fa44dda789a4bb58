package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/store/internal/sqlstore"
)

var _ store.Exporter = (*Store)(nil)

// ExportItems returns up to limit live items after after, ordered by the
// encoded namespace then key; see store.Exporter.
func (s *Store) ExportItems(ctx context.Context, after *store.Item, limit int) ([]*store.Item, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("store: export: limit %d is not positive", limit)
	}
	cursor, args := "", []any{unixNano(s.now()), limit}
	if after != nil {
		cursor = ` AND (ns, key) > (?3, ?4)`
		args = append(args, encodeNamespace(after.Namespace), after.Key)
	}
	rows, err := s.db.Read.QueryContext(ctx, qItem+` WHERE (expires IS NULL OR expires > ?1)`+cursor+`
		ORDER BY ns, key LIMIT ?2`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: export: %w", err)
	}
	var out []*store.Item
	for rows.Next() {
		it, _, err := scanItem(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: export: %w", err)
		}
		out = append(out, it)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
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
	err := s.inWriteTx(ctx, false, func(tx *sql.Tx) error {
		n = 0
		for _, it := range items {
			var expires any
			if !it.Expires.IsZero() {
				expires = unixNano(it.Expires)
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO store_items (ns, key, value, created, updated, expires)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, key) DO NOTHING`,
				encodeNamespace(it.Namespace), it.Key, string(it.Value), unixNano(it.Created), unixNano(it.Updated), expires)
			if err != nil {
				return fmt.Errorf("%s: %w", sqlstore.ItemName(it.Namespace, it.Key), err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: import: %w", err)
	}
	return n, nil
}
