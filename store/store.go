// Package store defines long-term memory shared across threads: a namespaced
// key-value store of JSON documents. A namespace is a path of strings such as
// ["project", "env", "agent", "thread"]. Graph nodes and tools reach the store
// a run was given through their context (graph.StoreFrom).
//
// Every backend passes the shared conformance suite in package
// store/storetest.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound means no live item has that namespace and key.
var ErrNotFound = errors.New("store: not found")

// ErrTooLarge means a value is larger than the backend's size limit, on Put
// or when read back (Get, Search). The error names the item and the limit;
// raise the limit with the backend's option if such values are expected.
var ErrTooLarge = errors.New("store: value exceeds the size limit")

// DefaultMaxValueBytes is the size limit of one item's value every backend
// applies unless configured otherwise.
const DefaultMaxValueBytes = 64 << 20

// CheckValueSize returns an error wrapping ErrTooLarge when a value of n
// bytes exceeds limit (0 or less means DefaultMaxValueBytes). op is "put"
// or "read". Backends call it on Put and on every value they read back.
func CheckValueSize(op string, namespace []string, key string, n, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxValueBytes
	}
	if n <= limit {
		return nil
	}
	return fmt.Errorf("store: %s %s/%s: the value has %d bytes, more than the limit of %d bytes: %w",
		op, strings.Join(namespace, "/"), key, n, limit, ErrTooLarge)
}

// Item is one stored document.
type Item struct {
	Namespace []string
	Key       string
	Value     json.RawMessage
	Created   time.Time
	Updated   time.Time
	// Expires is when the item stops being visible; zero means never.
	Expires time.Time
	// Score is the item's similarity to a Search's Query.Text (the best
	// cosine similarity of its embedded fields, in [-1, 1]); nil in every
	// other result.
	Score *float64
}

// PutOptions tune a Put.
type PutOptions struct {
	// TTL makes the item expire this long after the Put; 0 keeps it forever.
	TTL time.Duration
	// Index overrides the store's IndexConfig.Fields for this item (nil
	// keeps them). It has no effect on a store opened without an index.
	Index []string
	// NoIndex stores the item without embedding it: a semantic Search does
	// not find it (LangGraph's index=False).
	NoIndex bool
}

// Query bounds and filters a Search.
type Query struct {
	// Filter keeps items whose top-level JSON fields equal these values
	// (compared as JSON: 1 and 1.0 are equal, "1" and 1 are not).
	Filter map[string]any
	// Limit is the most items returned; 0 means 10.
	Limit int
	// Offset skips that many matching items first.
	Offset int
	// Text, when set, ranks the items by similarity to it instead of by
	// namespace and key: only items the store embedded (see IndexConfig)
	// match, best first, each with its Score; ties go by namespace, then
	// key. A store opened without an index returns an error wrapping
	// ErrNoIndex. Offset+Limit may be at most MaxRanked.
	Text string
}

// NamespaceQuery bounds ListNamespaces.
type NamespaceQuery struct {
	// Prefix keeps namespaces that start with these elements.
	Prefix []string
	// MaxDepth truncates namespaces to this many elements (deduplicating
	// the results); 0 means no truncation.
	MaxDepth int
	// Limit is the most namespaces returned; 0 means 100.
	Limit int
	// Offset skips that many namespaces first.
	Offset int
}

// Store is a namespaced key-value store. Implementations are safe for
// concurrent use. Search and ListNamespaces return results in a stable order:
// items by namespace then key (by score first for a semantic Search),
// namespaces lexicographically by element.
//
// A store opened with an IndexConfig embeds items on Put (before writing:
// a failing embedder fails the Put and leaves the old item), re-embeds them
// when they are replaced and drops their vectors when they are deleted or
// expire.
type Store interface {
	// Get returns the item, or an error wrapping ErrNotFound.
	Get(ctx context.Context, namespace []string, key string) (*Item, error)
	// Put creates or replaces an item. value must be valid JSON.
	Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error
	// Delete removes an item; deleting a missing item is not an error.
	Delete(ctx context.Context, namespace []string, key string) error
	// Search returns the live items whose namespace starts with prefix and
	// that match q.
	Search(ctx context.Context, prefix []string, q Query) ([]*Item, error)
	// ListNamespaces returns the distinct namespaces that hold live items.
	ListNamespaces(ctx context.Context, q NamespaceQuery) ([][]string, error)
}

// Put encodes v as JSON and stores it.
func Put[T any](ctx context.Context, s Store, namespace []string, key string, v T, opts PutOptions) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%s: %w", strings.Join(namespace, "/"), key, err)
	}
	return s.Put(ctx, namespace, key, b, opts)
}

// Get reads an item and decodes its value into a T. A value that does not
// decode is an error naming the item, never a zero T.
func Get[T any](ctx context.Context, s Store, namespace []string, key string) (T, error) {
	var v T
	it, err := s.Get(ctx, namespace, key)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(it.Value, &v); err != nil {
		return v, fmt.Errorf("store: decode %s/%s as %T: %w", strings.Join(namespace, "/"), key, v, err)
	}
	return v, nil
}

// ValidateNamespace reports an empty namespace or an empty element, which no
// backend accepts.
func ValidateNamespace(namespace []string) error {
	if len(namespace) == 0 {
		return errors.New("store: namespace is empty; give at least one element")
	}
	for i, e := range namespace {
		if e == "" {
			return fmt.Errorf("store: namespace element %d is empty in %q", i, namespace)
		}
	}
	return nil
}

// ValidateItem reports an invalid namespace (see ValidateNamespace) or an
// empty key, which no backend accepts.
func ValidateItem(namespace []string, key string) error {
	if err := ValidateNamespace(namespace); err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("store: key is empty in namespace %q", namespace)
	}
	return nil
}

// ValidatePrefix validates a Search prefix: unlike a namespace it may be
// empty (every namespace), but no element may be.
func ValidatePrefix(prefix []string) error {
	if len(prefix) == 0 {
		return nil
	}
	return ValidateNamespace(prefix)
}
