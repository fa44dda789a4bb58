package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
)

var keySeq atomic.Int64

// Key is a typed state key: a name, a value type T and a reducer that merges
// writes into the current value. Declare keys once, as package variables, and
// list them in New; read them with Get and write them with Set (or the
// package functions Append, Remove, DeleteKeys and Overwrite).
//
// A Key is immutable after NewKey and safe to share between graphs: a
// subgraph shares a key with its parent by using the same *Key.
type Key[T any] struct {
	keyRef
	red    Reducer[T]
	def    T
	hasDef bool
	// small: T is small and pointer-free (see smallValue), so a write's
	// value keeps nothing else alive (see Writes)
	small bool
	err   error
}

// keyRef is what a Write holds of its key: one word, where the keyImpl
// interface took two, so that a Write is 32 bytes, which the compiler
// copies in registers (a write barrier per pointer, not the bulk one of
// typedmemmove), and a slab of writes (see Writes) is a fifth smaller. The
// key's ID and name are read from it without a dynamic call.
type keyRef struct {
	id   int64
	name string
	self keyImpl // the *Key[T] that holds this keyRef
}

// KeyOption configures a key in NewKey: a Reducer or Default.
type KeyOption[T any] interface {
	applyKey(k *Key[T])
}

type defaultOption[T any] struct{ v T }

func (o defaultOption[T]) applyKey(k *Key[T]) { k.def, k.hasDef = o.v, true }

// Default sets the value Get returns while the key has never been written.
// Without it, Get returns T's zero value for an unwritten key.
func Default[T any](v T) KeyOption[T] { return defaultOption[T]{v} }

// NewKey declares a state key. Without a Reducer option the key keeps the
// last value written (see LastValue). Names must be non-empty and must not
// start with "__" (reserved); a bad name is reported by Compile.
func NewKey[T any](name string, opts ...KeyOption[T]) *Key[T] {
	k := &Key[T]{keyRef: keyRef{id: keySeq.Add(1), name: name}, red: LastValue[T](), small: smallValue(reflect.TypeFor[T]())}
	k.self = k
	for _, o := range opts {
		o.applyKey(k)
	}
	switch {
	case name == "":
		k.err = fmt.Errorf("a state key has an empty name")
	case strings.HasPrefix(name, "__"):
		k.err = fmt.Errorf("state key %q: names starting with \"__\" are reserved", name)
	case k.red.reduce == nil:
		k.err = fmt.Errorf("state key %q: reducer has no function", name)
	}
	return k
}

// Name returns the key's name, as used in checkpoints, events and errors.
func (k *Key[T]) Name() string { return k.name }

// Reducer names the key's reducer ("last-value", "append", ...).
func (k *Key[T]) Reducer() string { return k.red.name }

// Get returns the key's value in s, or its default when it has never been
// written. Reading a key that is not in the graph's schema panics with a
// message naming it; inside a node the engine turns that into the node's
// error.
func (k *Key[T]) Get(s State) T {
	v, _ := k.Lookup(s)
	return v
}

// Lookup is Get that also reports whether the key has ever been written.
func (k *Key[T]) Lookup(s State) (T, bool) {
	sl := s.slot(k.id, k.name)
	if !sl.set {
		return k.def, false
	}
	return sl.v.(T), true
}

// Version returns how many steps have changed the key (0: never written).
func (k *Key[T]) Version(s State) uint64 { return s.slot(k.id, k.name).ver >> 32 }

// Set writes v through the key's reducer: a last-value key takes v, an
// append key appends v's items, a sum key adds v, and so on.
func (k *Key[T]) Set(v T) Write { return Write{key: &k.keyRef, op: opReduce, small: k.small, val: v} }

// Overwrite replaces the key's value with v, bypassing its reducer (for
// example, to clear an append key).
func (k *Key[T]) Overwrite(v T) Write {
	return Write{key: &k.keyRef, op: opOverwrite, small: k.small, val: v}
}

// In returns the value that u writes to the key (the last such write), and
// whether u writes it at all. It lets code that reads update events stay
// typed.
func (k *Key[T]) In(u Update) (T, bool) {
	var zero T
	for i := len(u) - 1; i >= 0; i-- {
		if u[i].key == &k.keyRef && u[i].op != opRemove {
			return u[i].val.(T), true
		}
	}
	return zero, false
}

// Append writes items to a slice key through its reducer (for an append key
// they are appended; for a merge-by-ID key they replace the items with the
// same ID or are appended).
func Append[E any](k *Key[[]E], items ...E) Write {
	return Write{key: &k.keyRef, op: opReduce, val: items}
}

// Remove removes the items with these IDs from a merge-by-ID key. Removing an
// ID the key does not hold fails the step with an error naming the ID.
func Remove[E any](k *Key[[]E], ids ...string) Write {
	return Write{key: &k.keyRef, op: opRemove, val: ids}
}

// DeleteKeys removes entries from a merge-map key.
func DeleteKeys[K comparable, V any](k *Key[map[K]V], keys ...K) Write {
	return Write{key: &k.keyRef, op: opRemove, val: keys}
}

// ---- internal key interface, used by the engine without knowing T ----

type keyImpl interface {
	AnyKey
	keyID() int64
	ref() *keyRef
	keyErr() error
	lastValue() bool
	defaultValue() (any, bool)
	apply(cur any, has bool, ws []Write) (any, error)
	applyWrite(cur any, has bool, w *Write) (any, error)
	encodeValue(v any) ([]byte, error)
	valueType() reflect.Type
	decodeSet(b []byte) (Write, error)
	decodeValue(b []byte) (any, error)
	encodeWrite(w Write) ([]byte, error)
	appendWrite(e *wireEncoder, w Write) error
	decodeWrite(b []byte) (Write, error)
}

// AnyKey is any *Key[T]. It is what New takes to declare a graph's schema.
type AnyKey interface {
	Name() string
	Reducer() string
	impl() keyImpl
}

func (k *Key[T]) impl() keyImpl   { return k }
func (k *Key[T]) ref() *keyRef    { return &k.keyRef }
func (k *Key[T]) keyID() int64    { return k.id }
func (k *Key[T]) keyErr() error   { return k.err }
func (k *Key[T]) lastValue() bool { return k.red.last }
func (k *Key[T]) defaultValue() (any, bool) {
	if !k.hasDef {
		return nil, false
	}
	return k.def, true
}

// apply merges writes, in order, into the current value: unboxed once,
// boxed once. A value the loop itself made may be grown in place by the
// reducer (nobody else can see it yet).
func (k *Key[T]) apply(cur any, has bool, ws []Write) (any, error) {
	c := k.def
	if has {
		c = cur.(T)
	}
	owned := false
	for i := 0; i < len(ws); {
		var err error
		if n := k.batchable(ws[i:]); n > 1 {
			upds := make([]T, n)
			for j := range upds {
				upds[j] = ws[i+j].val.(T)
			}
			if c, err = k.red.batch(c, upds); err != nil {
				return nil, fmt.Errorf("state key %q: %w", k.name, err)
			}
			owned, i = false, i+n
			continue
		}
		if c, owned, err = k.applyOne(c, owned, ws[i]); err != nil {
			return nil, fmt.Errorf("state key %q: %w", k.name, err)
		}
		i++
	}
	return c, nil
}

// applyWrite is apply for one write, w: a chain's step writes its key
// once, and one write never batches (see batchable), so it goes straight
// to applyOne, without apply's loop.
//
// A reduce by a reducer that does not grow in place (Sum, say) calls the
// reducer here, without applyOne's call.
func (k *Key[T]) applyWrite(cur any, has bool, w *Write) (any, error) {
	c := k.def
	if has {
		c = cur.(T)
	}
	var err error
	if w.op == opReduce && k.red.grow == nil {
		c, err = k.red.reduce(c, w.val.(T))
	} else {
		c, _, err = k.applyOne(c, false, *w)
	}
	if err != nil {
		return nil, fmt.Errorf("state key %q: %w", k.name, err)
	}
	return c, nil
}

// batchable counts the leading writes the reducer can merge in one pass.
func (k *Key[T]) batchable(ws []Write) int {
	if k.red.batch == nil {
		return 0
	}
	n := 0
	for n < len(ws) && ws[n].op == opReduce {
		n++
	}
	return n
}

func (k *Key[T]) applyOne(c T, owned bool, w Write) (T, bool, error) {
	switch w.op {
	case opOverwrite:
		return w.val.(T), false, nil
	case opRemove:
		if k.red.remove == nil {
			return c, false, fmt.Errorf("its %s reducer cannot remove items", k.red.name)
		}
		out, err := k.red.remove(c, w.val)
		return out, true, err
	}
	if k.red.grow != nil {
		out, own := k.red.grow(c, w.val.(T), owned)
		return out, own, nil
	}
	out, err := k.red.reduce(c, w.val.(T))
	return out, false, err
}

func (k *Key[T]) encodeValue(v any) ([]byte, error) {
	b, err := json.Marshal(v.(T))
	if err != nil {
		return nil, fmt.Errorf("state key %q: encode %T: %w", k.name, v, err)
	}
	return b, nil
}

func (k *Key[T]) decodeValue(b []byte) (any, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("state key %q: decode as %T: %w", k.name, v, err)
	}
	return v, nil
}

// wireWrite is a write as stored in deltas and pending writes. The op is
// omitted for the common "set", so a delta costs little more than its data.
type wireWrite struct {
	Op    string          `json:"o,omitempty"`
	Value json.RawMessage `json:"v"`
}

func (k *Key[T]) valueType() reflect.Type { return reflect.TypeFor[T]() }

// decodeSet decodes a JSON value of the key's type into a write through
// its reducer.
func (k *Key[T]) decodeSet(b []byte) (Write, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return Write{}, fmt.Errorf("does not decode as %T: %w", v, err)
	}
	return Write{key: &k.keyRef, op: opReduce, small: k.small, val: v}, nil
}

// encodeWrite returns w's wire form, the JSON of a wireWrite.
func (k *Key[T]) encodeWrite(w Write) ([]byte, error) {
	e := getWireEncoder()
	defer e.release()
	if err := k.appendWrite(e, w); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// appendWrite appends w's wire form to e's buffer; on error it appends
// nothing of the value.
func (k *Key[T]) appendWrite(e *wireEncoder, w Write) error {
	op := w.op.String()
	if w.op == opReduce {
		op = ""
	}
	e.writeHead(op)
	// w.val holds a T (or, for a remove, the IDs): encoded as it is, not
	// converted back from T, which would box it again.
	if err := e.value(w.val); err != nil {
		return fmt.Errorf("state key %q: encode %s write: %w", k.name, w.op, err)
	}
	e.buf.WriteByte('}')
	return nil
}

func (k *Key[T]) decodeWrite(b []byte) (Write, error) {
	var ww wireWrite
	if err := json.Unmarshal(b, &ww); err != nil {
		return Write{}, fmt.Errorf("state key %q: decode write: %w", k.name, err)
	}
	w := Write{key: &k.keyRef}
	switch ww.Op {
	case "", opReduce.String(), opOverwrite.String():
		w.op = opReduce
		if ww.Op == opOverwrite.String() {
			w.op = opOverwrite
		}
		var v T
		if err := json.Unmarshal(ww.Value, &v); err != nil {
			return Write{}, fmt.Errorf("state key %q: decode %s write as %T: %w", k.name, ww.Op, v, err)
		}
		w.val, w.small = v, k.small
	case opRemove.String():
		if k.red.decodeRemoval == nil {
			return Write{}, fmt.Errorf("state key %q: a remove write for a %s reducer", k.name, k.red.name)
		}
		v, err := k.red.decodeRemoval(ww.Value)
		if err != nil {
			return Write{}, fmt.Errorf("state key %q: decode remove write: %w", k.name, err)
		}
		w.op, w.val = opRemove, v
	default:
		return Write{}, fmt.Errorf("state key %q: unknown write op %q", k.name, ww.Op)
	}
	return w, nil
}

// ---- writes ----

type writeOp uint8

const (
	opReduce writeOp = iota
	opOverwrite
	opRemove
)

func (o writeOp) String() string {
	switch o {
	case opOverwrite:
		return "overwrite"
	case opRemove:
		return "remove"
	}
	return "set"
}

// Write is one write to one state key, made by Key.Set, Key.Overwrite,
// Append, Remove or DeleteKeys. Writes are data, so a task's writes can be
// saved before its step commits and replayed after a crash.
type Write struct {
	key *keyRef
	op  writeOp
	// small: a set or overwrite of a key whose values are small and
	// pointer-free (Key.small), so Writes may carve it from a shared slab
	small bool
	val   any
}

// Key returns the name of the key written ("" for the zero Write).
func (w Write) Key() string {
	if w.key == nil {
		return ""
	}
	return w.key.name
}

// Op names the operation: "set" (through the reducer), "overwrite" or
// "remove".
func (w Write) Op() string { return w.op.String() }

// Value returns the written value as an any, for logging and generic
// tooling; typed code uses Key.In instead.
func (w Write) Value() any { return w.val }

// String formats the write for logs and test failures.
func (w Write) String() string { return fmt.Sprintf("%s %s %v", w.Op(), w.Key(), w.val) }
