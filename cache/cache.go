// Package cache stores the results of graph nodes so that a node run again
// on the same input can reuse them instead of running again.
//
// Cache is the interface the engine uses; this package has an in-memory,
// size-bounded implementation (NewMemory), cache/sqlite keeps entries in a
// SQLite file and cache/redis in Redis. cache/cachetest is the conformance
// suite all of them pass.
//
// # Rules every implementation follows
//
//   - Entries are grouped in namespaces (the engine uses one per node) and
//     addressed by a key within it. Namespaces and keys are opaque,
//     case-sensitive strings of 1 to MaxKeyBytes bytes; an empty or longer
//     one is an error wrapping ErrInvalid, never an entry under "".
//   - Values are opaque bytes (the engine stores JSON) of at most
//     MaxValueBytes bytes; a longer value is refused with an error wrapping
//     ErrTooLarge and nothing is stored. An empty or nil value is stored
//     and read back as an empty, non-nil slice.
//   - Set copies the value and Get returns a fresh copy: changing either
//     slice afterwards never changes the cache.
//   - A ttl of 0 means the entry never expires; a negative ttl is an error
//     wrapping ErrInvalid. An expired entry is never returned, though it
//     may be deleted later (each implementation says when).
//   - A canceled or expired context makes every method fail with an error
//     wrapping the context's error before it touches the cache.
//   - Implementations are safe for concurrent use.
package cache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Cache stores the results of graph nodes so that a node run again on the
// same input can reuse them. Keys are grouped in namespaces (the engine uses
// one per node).
type Cache interface {
	// Get returns the value stored under ns/key, ok=false when absent or expired.
	Get(ctx context.Context, ns, key string) (value []byte, ok bool, err error)
	// Set stores value under ns/key; ttl 0 means it never expires. Setting again replaces.
	Set(ctx context.Context, ns, key string, value []byte, ttl time.Duration) error
	// Clear removes every entry of the given namespaces, or of all namespaces when none given.
	Clear(ctx context.Context, namespaces ...string) error
}

// Limits every implementation enforces, so that a graph behaves the same on
// each backend.
const (
	// MaxKeyBytes is the longest namespace, and the longest key, in bytes.
	// Derive long keys from a hash of the input rather than the input.
	MaxKeyBytes = 1024
	// MaxValueBytes is the largest value Set accepts (16 MiB). A node
	// whose result is larger should not be cached.
	MaxValueBytes = 16 << 20
)

var (
	// ErrInvalid is wrapped by the errors for an empty or too long
	// namespace or key, and for a negative ttl.
	ErrInvalid = errors.New("cache: invalid argument")
	// ErrTooLarge is wrapped by Set's error for a value longer than
	// MaxValueBytes.
	ErrTooLarge = errors.New("cache: value too large")
)

// CheckKey returns an error wrapping ErrInvalid when ns or key is empty or
// longer than MaxKeyBytes. Implementations call it first in Get and Set.
func CheckKey(ns, key string) error {
	if err := CheckNamespace(ns); err != nil {
		return err
	}
	switch {
	case key == "":
		return fmt.Errorf("%w: the key in namespace %q is empty; give every entry a non-empty key", ErrInvalid, ns)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: the key in namespace %q is %d bytes, more than the %d allowed; use a hash of the input as key",
			ErrInvalid, ns, len(key), MaxKeyBytes)
	}
	return nil
}

// CheckNamespace returns an error wrapping ErrInvalid when ns is empty or
// longer than MaxKeyBytes. Implementations call it for each namespace given
// to Clear.
func CheckNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%w: the namespace is empty; the engine uses the node's name, other callers must name one too", ErrInvalid)
	case len(ns) > MaxKeyBytes:
		return fmt.Errorf("%w: the namespace %.40q... is %d bytes, more than the %d allowed", ErrInvalid, ns, len(ns), MaxKeyBytes)
	}
	return nil
}

// CheckSet returns the error Set must return for these arguments, or nil:
// the context's error, then CheckKey's, then one wrapping ErrInvalid for a
// negative ttl or ErrTooLarge for a value longer than MaxValueBytes.
func CheckSet(ctx context.Context, ns, key string, value []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: set %s/%s: %w", ns, key, err)
	}
	if err := CheckKey(ns, key); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("%w: ttl %v for %s/%s is negative; use 0 for an entry that never expires", ErrInvalid, ttl, ns, key)
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("%w: the value for %s/%s is %d bytes, more than the %d allowed; do not cache this node, or make its result smaller",
			ErrTooLarge, ns, key, len(value), MaxValueBytes)
	}
	return nil
}

// CheckGet returns the error Get must return for these arguments, or nil:
// the context's error, then CheckKey's.
func CheckGet(ctx context.Context, ns, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: get %s/%s: %w", ns, key, err)
	}
	return CheckKey(ns, key)
}

// CheckClear returns the error Clear must return for these arguments, or
// nil: the context's error, then CheckNamespace's for each namespace.
func CheckClear(ctx context.Context, namespaces []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: clear: %w", err)
	}
	for _, ns := range namespaces {
		if err := CheckNamespace(ns); err != nil {
			return err
		}
	}
	return nil
}
