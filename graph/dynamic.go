package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The functions in this file give generic code — the agent service, its
// HTTP API and UIs — a JSON view of a graph's state without knowing its
// key types.

// KeyInfo describes one state key of a graph.
type KeyInfo struct {
	Name    string
	Reducer string       // "last-value", "concat", "merge-by-id", ...
	Type    reflect.Type // the key's value type
}

// Keys describes the graph's state keys, in schema order.
func (g *Graph) Keys() []KeyInfo {
	out := make([]KeyInfo, len(g.sch.keys))
	for i, k := range g.sch.keys {
		out[i] = KeyInfo{Name: k.Name(), Reducer: k.Reducer(), Type: k.valueType()}
	}
	return out
}

// MarshalJSON encodes the written keys as one JSON object, in schema order:
// {"key": value, ...}.
func (s State) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i, sl := range s.vals {
		if !sl.set {
			continue
		}
		k := s.sch.keys[i]
		v, err := k.encodeValue(sl.v)
		if err != nil {
			return nil, fmt.Errorf("graph: encode state key %q: %w", k.Name(), err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(k.Name())
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ValueJSON returns one written key's value as JSON, and false when the key
// is unknown or unwritten.
func (s State) ValueJSON(key string) (json.RawMessage, bool, error) {
	if s.sch == nil {
		return nil, false, nil
	}
	i, ok := s.sch.byName(key)
	if !ok || !s.vals[i].set {
		return nil, false, nil
	}
	b, err := s.sch.keys[i].encodeValue(s.vals[i].v)
	return b, true, err
}

// DecodeInput turns a JSON object {"key": value, ...} into writes that set
// each key through its reducer, as an input or a state update from outside
// the graph does (an append key appends the given list; a last-value key
// takes the value). A key the schema lacks, or a value that does not decode
// as the key's type, is an error naming the key (and the keys there are).
func (g *Graph) DecodeInput(b []byte) (Update, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, fmt.Errorf("graph: the input must be a JSON object of state keys: %w", err)
	}
	u := make(Update, 0, len(obj))
	for _, k := range g.sch.keys { // schema order, so writes apply deterministically
		raw, ok := obj[k.Name()]
		if !ok {
			continue
		}
		w, err := k.decodeSet(raw)
		if err != nil {
			return nil, fmt.Errorf("graph: input key %q: %w", k.Name(), err)
		}
		u = append(u, w)
		delete(obj, k.Name())
	}
	if len(obj) > 0 {
		var unknown []string
		for name := range obj {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
		var known []string
		for _, k := range g.sch.keys {
			known = append(known, k.Name())
		}
		return nil, fmt.Errorf("graph: the input names keys the graph's state lacks: %s (its keys: %s)", strings.Join(slices.Sorted(slices.Values(unknown)), ", "), strings.Join(known, ", "))
	}
	return u, nil
}

// MarshalJSON encodes an update as {"key": value} with the value each key
// was given (several writes to one key: the last value, or for slices the
// items of all of them in order). Remove writes are listed under
// "key:remove" with the removed IDs. It is the "updates" view of a task.
func (u Update) MarshalJSON() ([]byte, error) {
	var order []string
	vals := map[string]any{}
	for _, w := range u {
		if w.key == nil {
			continue
		}
		name := w.Key()
		if w.op == opRemove {
			name += ":remove"
		}
		prev, seen := vals[name]
		if !seen {
			order = append(order, name)
			vals[name] = w.val
			continue
		}
		pv, nv := reflect.ValueOf(prev), reflect.ValueOf(w.val)
		if pv.Kind() == reflect.Slice && pv.Type() == nv.Type() {
			both := reflect.MakeSlice(pv.Type(), 0, pv.Len()+nv.Len())
			vals[name] = reflect.AppendSlice(reflect.AppendSlice(both, pv), nv).Interface()
		} else {
			vals[name] = w.val
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(name)
		vb, err := json.Marshal(vals[name])
		if err != nil {
			return nil, fmt.Errorf("graph: encode the update of %q: %w", name, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
