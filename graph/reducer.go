package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Reducer merges a write into a key's current value. Built-in reducers are
// LastValue (the default), Concat, MergeMap, MergeByID, MergeByIDFunc and
// Sum; Reduce makes one from a plain function. A Reducer is a KeyOption.
//
// Reducers never modify the current value in place: it belongs to the frozen
// snapshot other nodes of the step are reading.
type Reducer[T any] struct {
	name   string
	last   bool
	reduce func(cur, upd T) (T, error)
	remove func(cur T, ids any) (T, error)
	// grow, when set, merges like reduce; owned says the commit made cur
	// itself earlier in the same step (nobody else can see it), so grow may
	// change it in place. It reports whether its result is owned.
	grow func(cur, upd T, owned bool) (T, bool)
	// batch, when set, merges several updates in one pass (merge-by-ID
	// builds its ID index once instead of once per update).
	batch         func(cur T, upds []T) (T, error)
	decodeRemoval func([]byte) (any, error)
}

func (r Reducer[T]) applyKey(k *Key[T]) { k.red = r }

// LastValue keeps the last value written. Two writes to a last-value key in
// one step (from two nodes, or twice from one node) fail the step with an
// error naming the key and both writers, because their order would be
// arbitrary.
func LastValue[T any]() Reducer[T] {
	return Reducer[T]{name: "last-value", last: true, reduce: func(_, upd T) (T, error) { return upd, nil }}
}

// Reduce makes a reducer from a function of the current value and the
// written value. fn must not modify cur in place.
func Reduce[T any](name string, fn func(cur, upd T) (T, error)) Reducer[T] {
	return Reducer[T]{name: name, reduce: fn}
}

// Concat appends the written items to a slice key. Parallel nodes' writes
// are appended in task order (see the package documentation), never in
// finish order.
func Concat[E any]() Reducer[[]E] {
	return Reducer[[]E]{
		name: "append",
		reduce: func(cur, upd []E) ([]E, error) {
			if len(upd) == 0 {
				return cur, nil
			}
			return slices.Concat(cur, upd), nil
		},
		grow: func(cur, upd []E, owned bool) ([]E, bool) {
			switch {
			case len(upd) == 0:
				return cur, owned
			case owned:
				return append(cur, upd...), true
			}
			return slices.Concat(cur, upd), true
		},
	}
}

// Number is the constraint of Sum.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Sum adds the written value to the current one.
func Sum[N Number]() Reducer[N] {
	return Reducer[N]{name: "sum", reduce: func(cur, upd N) (N, error) { return cur + upd, nil }}
}

// MergeMap merges the written map into the current one, entry by entry; a
// written entry replaces the current entry with the same key. DeleteKeys
// removes entries.
func MergeMap[K comparable, V any]() Reducer[map[K]V] {
	return Reducer[map[K]V]{
		name: "merge-map",
		reduce: func(cur, upd map[K]V) (map[K]V, error) {
			if len(upd) == 0 {
				return cur, nil
			}
			out := make(map[K]V, len(cur)+len(upd))
			maps.Copy(out, cur)
			maps.Copy(out, upd)
			return out, nil
		},
		grow: func(cur, upd map[K]V, owned bool) (map[K]V, bool) {
			switch {
			case len(upd) == 0:
				return cur, owned
			case owned && cur != nil:
				maps.Copy(cur, upd)
				return cur, true
			}
			out := make(map[K]V, len(cur)+len(upd))
			maps.Copy(out, cur)
			maps.Copy(out, upd)
			return out, true
		},
		remove: func(cur map[K]V, ids any) (map[K]V, error) {
			out := maps.Clone(cur)
			for _, k := range ids.([]K) {
				delete(out, k)
			}
			return out, nil
		},
		decodeRemoval: func(b []byte) (any, error) {
			var ks []K
			err := json.Unmarshal(b, &ks)
			return ks, err
		},
	}
}

// Identifiable is an item with a stable ID, as MergeByID needs.
type Identifiable interface {
	ID() string
}

// MergeByID merges items by ID, as chat histories need: a written item
// replaces the current item with the same ID (keeping its position) or is
// appended; Remove removes items by ID. An item with an empty ID is an error:
// giving every item an ID is what makes replace and remove possible.
func MergeByID[E Identifiable]() Reducer[[]E] {
	return MergeByIDFunc(func(e E) string { return e.ID() })
}

// MergeByIDFunc is MergeByID for items whose ID is read by a function, for
// types that keep their ID in a field named ID.
func MergeByIDFunc[E any](id func(E) string) Reducer[[]E] {
	merge := func(cur []E, upds [][]E) ([]E, error) {
		n := 0
		for _, upd := range upds {
			n += len(upd)
		}
		out := make([]E, len(cur), len(cur)+n)
		copy(out, cur)
		// A few written items (one message appended to a history) are
		// found by scanning: an index of every current item would cost a
		// map entry per item on every write. Past mergeScanMax written
		// items the index pays for itself.
		var pos map[string]int
		if n > mergeScanMax {
			pos = make(map[string]int, len(cur)+n)
			for i, e := range cur {
				pos[id(e)] = i // the last item with an ID wins, as in the scan
			}
		}
		for _, upd := range upds {
			for i, e := range upd {
				key := id(e)
				if key == "" {
					return nil, fmt.Errorf("merge-by-id: written item %d has an empty ID; give every item an ID", i)
				}
				p := -1
				if pos != nil {
					if q, ok := pos[key]; ok {
						p = q
					} else {
						pos[key] = len(out)
					}
				} else {
					p = lastWithID(out, key, id)
				}
				if p >= 0 {
					out[p] = e
					continue
				}
				out = append(out, e)
			}
		}
		// No spare capacity: two nodes appending to the same snapshot must
		// not share a backing array.
		return slices.Clip(out), nil
	}
	return Reducer[[]E]{
		name: "merge-by-id",
		reduce: func(cur, upd []E) ([]E, error) {
			if len(upd) == 0 {
				return cur, nil
			}
			return merge(cur, [][]E{upd})
		},
		batch: merge,
		remove: func(cur []E, ids any) ([]E, error) {
			drop := make(map[string]bool, len(ids.([]string)))
			for _, x := range ids.([]string) {
				drop[x] = true
			}
			out := make([]E, 0, len(cur))
			for _, e := range cur {
				if drop[id(e)] {
					delete(drop, id(e))
					continue
				}
				out = append(out, e)
			}
			if len(drop) > 0 {
				missing := slices.Sorted(maps.Keys(drop))
				return nil, fmt.Errorf("merge-by-id: cannot remove %q: no item has that ID", missing)
			}
			return out, nil
		},
		decodeRemoval: func(b []byte) (any, error) {
			var ids []string
			err := json.Unmarshal(b, &ids)
			return ids, err
		},
	}
}

// mergeScanMax is how many written items merge-by-ID finds by scanning the
// current items; past it, it indexes them in a map first.
const mergeScanMax = 8

// lastWithID returns the position of the last item of items with this ID,
// or -1. The last, because the map it stands in for kept the last.
func lastWithID[E any](items []E, key string, id func(E) string) int {
	for i := len(items) - 1; i >= 0; i-- {
		if id(items[i]) == key {
			return i
		}
	}
	return -1
}
