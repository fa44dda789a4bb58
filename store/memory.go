package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

// Memory is a Store that keeps everything in process memory, for tests and
// single-process use. It is safe for concurrent use; the zero value is not
// usable, call NewMemory.
//
// Memory defines the semantics every Store follows (the suite in package
// store/storetest checks them): namespaces are validated with
// ValidateNamespace, values must be valid JSON, a replaced item keeps its
// Created time, expired items are invisible, and every value passed in or
// handed out is a deep copy.
//
// Its size limit (see MemoryMaxValueBytes) is checked on Put: it never
// holds a larger value, so reads need no check.
type Memory struct {
	mu       sync.Mutex
	items    map[string]*Item // itemKey(namespace, key) -> item
	now      func() time.Time // clock for Created, Updated and expiry
	maxBytes int
	index    *IndexConfig
	indexErr error                  // an invalid IndexConfig, returned by Put and Search
	vectors  map[string][][]float32 // itemKey -> the item's embedded fields
}

var _ Store = (*Memory)(nil)

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// MemoryMaxValueBytes sets the most bytes of one value Put accepts; a
// larger one fails with an error wrapping ErrTooLarge. The default is
// DefaultMaxValueBytes; n <= 0 keeps it.
func MemoryMaxValueBytes(n int) MemoryOption {
	return func(m *Memory) {
		if n > 0 {
			m.maxBytes = n
		}
	}
}

// MemoryIndex makes the store embed items on Put and answer Query.Text
// (see IndexConfig). An invalid config makes every Put and Search fail
// with the reason.
func MemoryIndex(cfg IndexConfig) MemoryOption {
	return func(m *Memory) {
		cfg.Fields = slices.Clone(cfg.Fields)
		m.index, m.indexErr = &cfg, cfg.Validate()
	}
}

// NewMemory returns an empty in-memory Store.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{items: make(map[string]*Item), now: time.Now, maxBytes: DefaultMaxValueBytes, vectors: make(map[string][][]float32)}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Get returns a copy of the live item, or an error wrapping ErrNotFound. An
// expired item is removed when Get finds it.
func (m *Memory) Get(ctx context.Context, namespace []string, key string) (*Item, error) {
	if err := checkItem(ctx, namespace, key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := itemKey(namespace, key)
	it := m.items[k]
	if it == nil || !m.liveLocked(k, it, m.now()) {
		return nil, fmt.Errorf("store: get %s: %w", itemName(namespace, key), ErrNotFound)
	}
	return cloneItem(it), nil
}

// Put creates or replaces an item. value must be valid JSON. Replacing a
// live item keeps its Created time; Updated is always the time of the Put.
// With opts.TTL > 0 the item expires that long after the Put; otherwise it
// never expires, even if the item it replaces had a TTL.
func (m *Memory) Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts PutOptions) error {
	if err := checkItem(ctx, namespace, key); err != nil {
		return err
	}
	if err := CheckValueSize("put", namespace, key, len(value), m.maxBytes); err != nil {
		return err
	}
	if !json.Valid(value) {
		return fmt.Errorf("store: put %s: value is not valid JSON: %.40q", itemName(namespace, key), value)
	}
	if opts.TTL < 0 {
		return fmt.Errorf("store: put %s: negative TTL %s", itemName(namespace, key), opts.TTL)
	}
	var vecs [][]float32
	if m.index != nil {
		if m.indexErr != nil {
			return m.indexErr
		}
		// Embed before taking the lock: the embedder may be a network call.
		found, err := m.index.EmbedItem(ctx, value, m.index.FieldsFor(opts))
		if err != nil {
			return fmt.Errorf("store: put %s: %w", itemName(namespace, key), err)
		}
		for _, v := range found {
			vecs = append(vecs, v.Vector)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	k := itemKey(namespace, key)
	it := &Item{
		Namespace: slices.Clone(namespace),
		Key:       key,
		Value:     bytes.Clone(value),
		Created:   now,
		Updated:   now,
	}
	if old := m.items[k]; old != nil && live(old, now) {
		it.Created = old.Created
	}
	if opts.TTL > 0 {
		it.Expires = now.Add(opts.TTL)
	}
	m.items[k] = it
	if len(vecs) > 0 {
		m.vectors[k] = vecs
	} else {
		delete(m.vectors, k)
	}
	return nil
}

// Delete removes an item; deleting a missing item returns nil.
func (m *Memory) Delete(ctx context.Context, namespace []string, key string) error {
	if err := checkItem(ctx, namespace, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := itemKey(namespace, key)
	delete(m.items, k)
	delete(m.vectors, k)
	return nil
}

// Search returns copies of the live items whose namespace starts with the
// elements of prefix (an empty prefix matches every namespace) and whose
// value is a JSON object with every field of q.Filter equal to the filter's
// value, compared as JSON (1 equals 1.0, "1" does not equal 1, objects and
// arrays compare element by element). Items are ordered by namespace,
// element by element, then by key; q.Offset of them are skipped and at most
// q.Limit (10 when 0) returned.
func (m *Memory) Search(ctx context.Context, prefix []string, q Query) ([]*Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	if q.Limit < 0 || q.Offset < 0 {
		return nil, fmt.Errorf("store: search: negative limit %d or offset %d", q.Limit, q.Offset)
	}
	limit := cmp.Or(q.Limit, 10)
	filter := make(map[string]any, len(q.Filter))
	for field, v := range q.Filter {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("store: search: filter field %q: %w", field, err)
		}
		if filter[field], err = jsonmatch.Decode(b); err != nil {
			return nil, fmt.Errorf("store: search: filter field %q: %w", field, err)
		}
	}
	if q.Text != "" {
		return m.searchText(ctx, prefix, q, filter, limit)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var found []*Item
	for k, it := range m.items {
		if !m.liveLocked(k, it, now) || !hasPrefix(it.Namespace, prefix) || !jsonmatch.Matches(it.Value, filter) {
			continue
		}
		found = append(found, it)
	}
	slices.SortFunc(found, func(a, b *Item) int {
		return cmp.Or(slices.Compare(a.Namespace, b.Namespace), strings.Compare(a.Key, b.Key))
	})
	found = page(found, q.Offset, limit)
	out := make([]*Item, len(found))
	for i, it := range found {
		out[i] = cloneItem(it)
	}
	return out, nil
}

// searchText answers a semantic Search: the embedded live items under
// prefix matching filter, ranked by similarity to q.Text.
func (m *Memory) searchText(ctx context.Context, prefix []string, q Query, filter map[string]any, limit int) ([]*Item, error) {
	if m.index == nil {
		return nil, fmt.Errorf("store: search: %w", ErrNoIndex)
	}
	if m.indexErr != nil {
		return nil, m.indexErr
	}
	if err := CheckRanked(q.Offset, limit); err != nil {
		return nil, err
	}
	qv, err := m.index.EmbedQuery(ctx, q.Text)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	top := NewTopK(q.Offset + limit)
	for k, it := range m.items {
		vecs := m.vectors[k]
		if len(vecs) == 0 || !m.liveLocked(k, it, now) || !hasPrefix(it.Namespace, prefix) || !jsonmatch.Matches(it.Value, filter) {
			continue
		}
		score, _, err := BestScore(qv, vecs, it.Namespace, it.Key)
		if err != nil {
			return nil, err
		}
		top.Offer(it.Namespace, it.Key, score)
	}
	best := top.Best(q.Offset)
	out := make([]*Item, len(best))
	for i, c := range best {
		it := cloneItem(m.items[itemKey(c.Namespace, c.Key)])
		score := c.Score
		it.Score = &score
		out[i] = it
	}
	return out, nil
}

// ListNamespaces returns the distinct namespaces that hold live items and
// start with q.Prefix, each cut to q.MaxDepth elements when that is set
// (duplicates left by the cut are merged). They are sorted element by
// element (["a"] < ["a" "b"] < ["a-b"]); q.Offset of them are skipped and at
// most q.Limit (100 when 0) returned.
func (m *Memory) ListNamespaces(ctx context.Context, q NamespaceQuery) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidatePrefix(q.Prefix); err != nil {
		return nil, fmt.Errorf("store: list namespaces: %w", err)
	}
	if q.MaxDepth < 0 || q.Limit < 0 || q.Offset < 0 {
		return nil, fmt.Errorf("store: list namespaces: negative max depth %d, limit %d or offset %d", q.MaxDepth, q.Limit, q.Offset)
	}
	limit := cmp.Or(q.Limit, 100)

	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	seen := make(map[string]bool)
	var out [][]string
	for k, it := range m.items {
		if !m.liveLocked(k, it, now) || !hasPrefix(it.Namespace, q.Prefix) {
			continue
		}
		ns := it.Namespace
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		if nk := itemKey(ns, ""); !seen[nk] {
			seen[nk] = true
			out = append(out, slices.Clone(ns))
		}
	}
	slices.SortFunc(out, slices.Compare)
	return page(out, q.Offset, limit), nil
}

// liveLocked reports whether it has not expired at now, removing it when it
// has. m.mu must be held.
func (m *Memory) liveLocked(k string, it *Item, now time.Time) bool {
	if live(it, now) {
		return true
	}
	delete(m.items, k)
	delete(m.vectors, k)
	return false
}

func live(it *Item, now time.Time) bool {
	return it.Expires.IsZero() || now.Before(it.Expires)
}

// checkItem reports a canceled context, an invalid namespace or an empty
// key.
func checkItem(ctx context.Context, namespace []string, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return ValidateItem(namespace, key)
}

// itemKey encodes a namespace and key as a map key; every element is
// length-prefixed, so distinct inputs never collide.
func itemKey(namespace []string, key string) string {
	var b strings.Builder
	for _, e := range namespace {
		b.WriteString(strconv.Itoa(len(e)))
		b.WriteByte(':')
		b.WriteString(e)
	}
	b.WriteByte('|')
	b.WriteString(key)
	return b.String()
}

func itemName(namespace []string, key string) string {
	return strings.Join(namespace, "/") + "/" + key
}

func hasPrefix(namespace, prefix []string) bool {
	return len(namespace) >= len(prefix) && slices.Equal(namespace[:len(prefix)], prefix)
}

func page[T any](s []T, offset, limit int) []T {
	if offset >= len(s) {
		return nil
	}
	s = s[offset:]
	return s[:min(limit, len(s))]
}

func cloneItem(it *Item) *Item {
	c := *it
	c.Namespace = slices.Clone(it.Namespace)
	c.Value = bytes.Clone(it.Value)
	if it.Score != nil {
		score := *it.Score
		c.Score = &score
	}
	return &c
}
