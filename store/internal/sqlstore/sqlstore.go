// Package sqlstore holds the checks the SQL stores (store/sqlite,
// store/postgres) make before they touch their database, written once so
// both refuse the same input with the same words.
package sqlstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/store"
)

// CheckItem reports a canceled context, an invalid namespace or an empty
// key.
func CheckItem(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return store.ValidateItem(namespace, key)
}

// ItemName is an item's name in errors: its namespace and key joined by
// "/".
func ItemName(namespace []string, key string) string {
	return strings.Join(namespace, "/") + "/" + key
}

// CheckPut checks a Put: the item (CheckItem), the value's size against
// maxBytes (store.CheckValueSize), the value is JSON and the TTL not
// negative.
func CheckPut(ctx context.Context, namespace []string, key string, value json.RawMessage, opts store.PutOptions, maxBytes int) error {
	if err := CheckItem(ctx, namespace, key); err != nil {
		return err
	}
	if err := store.CheckValueSize("put", namespace, key, len(value), maxBytes); err != nil {
		return err
	}
	if !json.Valid(value) {
		return fmt.Errorf("store: put %s: value is not valid JSON: %.40q", ItemName(namespace, key), value)
	}
	if opts.TTL < 0 {
		return fmt.Errorf("store: put %s: negative TTL %s", ItemName(namespace, key), opts.TTL)
	}
	return nil
}

// CheckImport checks items to import: each item (CheckItem) and that
// each value is JSON.
func CheckImport(ctx context.Context, items []*store.Item) error {
	for _, it := range items {
		if err := CheckItem(ctx, it.Namespace, it.Key); err != nil {
			return err
		}
		if !json.Valid(it.Value) {
			return fmt.Errorf("store: import %s: value is not valid JSON: %.40q", ItemName(it.Namespace, it.Key), it.Value)
		}
	}
	return nil
}

// CheckNamespaceQuery checks a ListNamespaces query: the context, the
// prefix, and no negative depth, limit or offset.
func CheckNamespaceQuery(ctx context.Context, q store.NamespaceQuery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.ValidatePrefix(q.Prefix); err != nil {
		return fmt.Errorf("store: list namespaces: %w", err)
	}
	if q.MaxDepth < 0 || q.Limit < 0 || q.Offset < 0 {
		return fmt.Errorf("store: list namespaces: negative max depth %d, limit %d or offset %d", q.MaxDepth, q.Limit, q.Offset)
	}
	return nil
}

// CheckSearch checks a Search: the context, the prefix, no negative limit
// or offset, and for a text query (q.Text) that the store has an index
// (hasIndex; store.ErrNoIndex otherwise) and the page is one it ranks
// (store.CheckRanked). It returns the page's limit (10 when q.Limit is 0).
func CheckSearch(ctx context.Context, prefix []string, q store.Query, hasIndex bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return 0, fmt.Errorf("store: search: %w", err)
	}
	if q.Limit < 0 || q.Offset < 0 {
		return 0, fmt.Errorf("store: search: negative limit %d or offset %d", q.Limit, q.Offset)
	}
	limit := cmp.Or(q.Limit, 10)
	if q.Text != "" {
		if !hasIndex {
			return 0, fmt.Errorf("store: search: %w", store.ErrNoIndex)
		}
		if err := store.CheckRanked(q.Offset, limit); err != nil {
			return 0, err
		}
	}
	return limit, nil
}
