package graph

import (
	"fmt"
	"slices"
	"strings"
)

// schema maps a graph's keys to slots.
type schema struct {
	keys  []keyImpl
	index map[int64]int // key id -> slot
	// small: every key's values are small and pointer-free, so old states
	// keep nothing alive but their slots (see valGens)
	small bool
	// dense maps key id - lo to slot + 1 (0: not in the schema) when the
	// schema's ids are close together, as keys declared together are:
	// reading and writing a key then costs an index, not a map lookup
	lo    int64
	dense []int32
}

// maxDense bounds the span of key ids a dense index covers.
const maxDense = 1 << 12

// slotOf returns the slot of the key with this id.
func (s *schema) slotOf(id int64) (int, bool) {
	if s.dense != nil {
		if d := uint64(id - s.lo); d < uint64(len(s.dense)) {
			if i := s.dense[d]; i > 0 {
				return int(i - 1), true
			}
		}
		return 0, false
	}
	i, ok := s.index[id]
	return i, ok
}

func newSchema(keys []AnyKey) (*schema, []error) {
	s := &schema{index: make(map[int64]int, len(keys))}
	var errs []error
	names := make(map[string]bool, len(keys))
	for _, ak := range keys {
		if ak == nil {
			errs = append(errs, fmt.Errorf("a nil key was passed to New"))
			continue
		}
		k := ak.impl()
		if err := k.keyErr(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.index[k.keyID()]; dup {
			continue // the same key listed twice is harmless
		}
		if names[k.Name()] {
			errs = append(errs, fmt.Errorf("two different state keys are named %q; key names must be unique in a graph", k.Name()))
			continue
		}
		names[k.Name()] = true
		s.index[k.keyID()] = len(s.keys)
		s.keys = append(s.keys, k)
	}
	s.small = true
	for _, k := range s.keys {
		s.small = s.small && smallValue(k.valueType())
	}
	if len(s.keys) > 0 {
		lo, hi := s.keys[0].keyID(), s.keys[0].keyID()
		for _, k := range s.keys {
			lo, hi = min(lo, k.keyID()), max(hi, k.keyID())
		}
		if hi-lo < maxDense {
			s.lo, s.dense = lo, make([]int32, hi-lo+1)
			for i, k := range s.keys {
				s.dense[k.keyID()-lo] = int32(i + 1)
			}
		}
	}
	return s, errs
}

func (s *schema) byName(name string) (int, bool) {
	for i, k := range s.keys {
		if k.Name() == name {
			return i, true
		}
	}
	return 0, false
}

// slot is one key's value in a state.
type slot struct {
	v any
	// ver is the key's blob version: the count of changing steps in the
	// high 32 bits, and in the low 32 bits a tag from the checkpoint that
	// first stores it, so branches forked from one checkpoint never reuse a
	// version (blobs are stored once per key and version).
	ver uint64
	set bool
}

// State is a read-only snapshot of a graph's state. Nodes receive the
// snapshot frozen at the start of their step; read it with Key.Get. A State
// is safe to keep and to read from any goroutine: the engine never changes a
// State it has handed out.
type State struct {
	sch  *schema
	vals []slot
}

func (s State) slot(id int64, name string) slot {
	if s.sch == nil {
		panic(fmt.Sprintf("graph: key %q read from a zero State", name))
	}
	i, ok := s.sch.slotOf(id)
	if !ok {
		panic(fmt.Sprintf("graph: key %q is not in this graph's schema; list it in graph.New", name))
	}
	return s.vals[i]
}

// Keys lists the names of the keys that have been written, in schema order.
func (s State) Keys() []string {
	var out []string
	for i, sl := range s.vals {
		if sl.set {
			out = append(out, s.sch.keys[i].Name())
		}
	}
	return out
}

// String formats the written keys and their values, for logs and tests.
func (s State) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i, sl := range s.vals {
		if !sl.set {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s: %v", s.sch.keys[i].Name(), sl.v)
	}
	b.WriteByte('}')
	return b.String()
}

func (s State) clone() State {
	return State{sch: s.sch, vals: slices.Clone(s.vals)}
}

// Update is a node's writes. It is an Output; return it from a node (or nil
// for no writes).
type Update []Write

func (Update) output() {}

// Output is what a node returns: an Update or a Command.
type Output interface{ output() }
