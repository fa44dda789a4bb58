package cache

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultMaxEntries is how many entries a Memory made without
// WithMaxEntries holds before it evicts the least recently used one.
const DefaultMaxEntries = 10_000

// Memory is a Cache held in the process's memory, bounded by a number of
// entries: when a Set would exceed the bound, the least recently used entry
// (read or written) is evicted. Expired entries are deleted when a Get finds
// them, and otherwise age out like any other entry. Its contents are lost
// when the process ends. It is safe for concurrent use; make one with
// NewMemory.
type Memory struct {
	max int
	now func() time.Time
	bad error // an invalid option's error, returned by every call

	mu      sync.Mutex
	entries map[entryKey]*list.Element // of *entry
	lru     list.List                  // front: most recently used
	sizes   map[string]int             // entries per namespace, for Clear(ns)
}

type entryKey struct{ ns, key string }

type entry struct {
	k       entryKey
	value   []byte
	expires time.Time // zero: never
}

var _ Cache = (*Memory)(nil)

// MemoryOption configures a Memory.
type MemoryOption func(*Memory) error

// WithMaxEntries sets how many entries the Memory keeps at most (default
// DefaultMaxEntries). n must be at least 1: a Memory made with a smaller n
// fails every call with an error wrapping ErrInvalid that says so.
func WithMaxEntries(n int) MemoryOption {
	return func(m *Memory) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxEntries(%d): a memory cache must hold at least one entry", ErrInvalid, n)
		}
		m.max = n
		return nil
	}
}

// NewMemory returns an empty Memory. When an option is invalid, every call
// of the Memory fails with that option's error (wrapping ErrInvalid), so a
// misconfiguration shows at the first use instead of being ignored.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{max: DefaultMaxEntries, now: time.Now, entries: make(map[entryKey]*list.Element), sizes: make(map[string]int)}
	for _, o := range opts {
		if err := o(m); err != nil && m.bad == nil {
			m.bad = err
		}
	}
	return m
}

// Len returns the number of entries held, expired ones not yet deleted
// included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// Get returns a copy of the value stored under ns/key; ok is false when
// there is none or it has expired. A hit makes the entry the most recently
// used.
func (m *Memory) Get(ctx context.Context, ns, key string) ([]byte, bool, error) {
	if m.bad != nil {
		return nil, false, m.bad
	}
	if err := CheckGet(ctx, ns, key); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[entryKey{ns, key}]
	if !ok {
		return nil, false, nil
	}
	e := el.Value.(*entry)
	if !e.expires.IsZero() && !m.now().Before(e.expires) {
		m.remove(el)
		return nil, false, nil
	}
	m.lru.MoveToFront(el)
	return append([]byte{}, e.value...), true, nil
}

// Set stores a copy of value under ns/key, replacing what was there, and
// evicts the least recently used entry when the Memory is full.
func (m *Memory) Set(ctx context.Context, ns, key string, value []byte, ttl time.Duration) error {
	if m.bad != nil {
		return m.bad
	}
	if err := CheckSet(ctx, ns, key, value, ttl); err != nil {
		return err
	}
	e := &entry{k: entryKey{ns, key}, value: append([]byte{}, value...)}
	if ttl > 0 {
		e.expires = m.now().Add(ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[e.k]; ok {
		el.Value = e
		m.lru.MoveToFront(el)
		return nil
	}
	for len(m.entries) >= m.max {
		m.remove(m.lru.Back())
	}
	m.entries[e.k] = m.lru.PushFront(e)
	m.sizes[ns]++
	return nil
}

// Clear removes every entry of the given namespaces, or every entry when
// none is given.
func (m *Memory) Clear(ctx context.Context, namespaces ...string) error {
	if m.bad != nil {
		return m.bad
	}
	if err := CheckClear(ctx, namespaces); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(namespaces) == 0 {
		clear(m.entries)
		clear(m.sizes)
		m.lru.Init()
		return nil
	}
	drop := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		if m.sizes[ns] > 0 {
			drop[ns] = true
		}
	}
	if len(drop) == 0 {
		return nil
	}
	for el := m.lru.Front(); el != nil; {
		next := el.Next()
		if drop[el.Value.(*entry).k.ns] {
			m.remove(el)
		}
		el = next
	}
	return nil
}

// remove deletes the entry of el; m.mu is held.
func (m *Memory) remove(el *list.Element) {
	e := m.lru.Remove(el).(*entry)
	delete(m.entries, e.k)
	if m.sizes[e.k.ns]--; m.sizes[e.k.ns] == 0 {
		delete(m.sizes, e.k.ns)
	}
}
