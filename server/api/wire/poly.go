package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The fields whose JSON has more than one shape. Each decodes every shape
// the SDK sends, with errors at the exact member, and encodes one canonical
// shape that decodes back to the same value.

// StreamModes is stream_mode: one mode or a list of them. Empty means the
// default ("values").
type StreamModes []StreamMode

func (m *StreamModes) decodeWire(ptr string, v any) []FieldError {
	one := func(p string, x any) (StreamMode, *FieldError) {
		s, ok := x.(string)
		if !ok {
			return "", &FieldError{Pointer: p, Detail: "must be a stream mode (a string), not " + kindOf(x)}
		}
		if !slices.Contains(StreamMode("").Values(), s) {
			return "", &FieldError{Pointer: p, Detail: fmt.Sprintf("%q is not a stream mode; use one of %s", s, quoteList(StreamMode("").Values()))}
		}
		return StreamMode(s), nil
	}
	var errs []FieldError
	switch x := v.(type) {
	case string:
		s, e := one(ptr, x)
		if e != nil {
			return []FieldError{*e}
		}
		*m = StreamModes{s}
	case []any:
		out := make(StreamModes, 0, len(x))
		for i, e := range x {
			s, fe := one(ptr+"/"+strconv.Itoa(i), e)
			if fe != nil {
				errs = append(errs, *fe)
				continue
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		*m = out
	default:
		errs = append(errs, FieldError{Pointer: ptr, Detail: "must be a stream mode or a list of them, not " + kindOf(v)})
	}
	return errs
}

// UnmarshalJSON accepts what Decode accepts.
func (m *StreamModes) UnmarshalJSON(b []byte) error { return decodeInto(b, m) }

// Has reports whether mode was asked for.
func (m StreamModes) Has(mode StreamMode) bool { return slices.Contains(m, mode) }

// NodeSelector is interrupt_before / interrupt_after: "*" (every node) or
// a list of node names. Trellis honours it; a name the graph does not have
// fails the run's creation with a 422 (checked by the run service, which
// knows the graph).
type NodeSelector struct {
	// All is set for "*".
	All bool
	// Nodes are the named nodes (when not All).
	Nodes []string
}

func (n *NodeSelector) decodeWire(ptr string, v any) []FieldError {
	switch x := v.(type) {
	case string:
		if x != "*" {
			return []FieldError{{Pointer: ptr, Detail: fmt.Sprintf("must be \"*\" or a list of node names; for one node send [%q]", x)}}
		}
		*n = NodeSelector{All: true}
	case []any:
		var errs []FieldError
		out := NodeSelector{Nodes: make([]string, 0, len(x))}
		for i, e := range x {
			s, ok := e.(string)
			if !ok || s == "" {
				errs = append(errs, FieldError{Pointer: ptr + "/" + strconv.Itoa(i), Detail: "must be a node name (a non-empty string), not " + kindOf(e)})
				continue
			}
			out.Nodes = append(out.Nodes, s)
		}
		*n = out
		return errs
	default:
		return []FieldError{{Pointer: ptr, Detail: "must be \"*\" or a list of node names, not " + kindOf(v)}}
	}
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (n *NodeSelector) UnmarshalJSON(b []byte) error { return decodeInto(b, n) }

// MarshalJSON writes "*" or the list.
func (n NodeSelector) MarshalJSON() ([]byte, error) {
	if n.All {
		return []byte(`"*"`), nil
	}
	if n.Nodes == nil {
		return []byte(`[]`), nil
	}
	return json.Marshal(n.Nodes)
}

// Goto is command.goto: a node name, a Send ({"node", "input"}), or a list
// mixing both. Trellis honours it: names must be the resumed node's
// declared destinations and Sends must target Send nodes (the run service
// checks, with a 422 naming the node).
type Goto []GotoTarget

// GotoTarget is one goto: a plain node name, or a Send with its input.
type GotoTarget struct {
	// Node is the node to go to.
	Node string
	// Send is set when the target was a Send object; Input is then its
	// payload (JSON null when it had none).
	Send  bool
	Input json.RawMessage
}

func (g *Goto) decodeWire(ptr string, v any) []FieldError {
	if a, ok := v.([]any); ok {
		var errs []FieldError
		out := make(Goto, 0, len(a))
		for i, e := range a {
			t, fe := gotoTarget(ptr+"/"+strconv.Itoa(i), e)
			errs = append(errs, fe...)
			if fe == nil {
				out = append(out, t)
			}
		}
		*g = out
		return errs
	}
	t, errs := gotoTarget(ptr, v)
	if errs == nil {
		*g = Goto{t}
	}
	return errs
}

func gotoTarget(ptr string, v any) (GotoTarget, []FieldError) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return GotoTarget{}, []FieldError{{Pointer: ptr, Detail: "must name a node (an empty string does not)"}}
		}
		return GotoTarget{Node: x}, nil
	case map[string]any:
		node, ok := x["node"]
		if !ok {
			return GotoTarget{}, []FieldError{{Pointer: ptr + "/node", Detail: "required field is missing: a Send is {\"node\": name, \"input\": value}"}}
		}
		s, ok := node.(string)
		if !ok || s == "" {
			return GotoTarget{}, []FieldError{{Pointer: ptr + "/node", Detail: "must be a node name (a non-empty string), not " + kindOf(node)}}
		}
		in, _ := json.Marshal(x["input"]) // a parsed tree always marshals; absent is null
		return GotoTarget{Node: s, Send: true, Input: in}, nil
	default:
		return GotoTarget{}, []FieldError{{Pointer: ptr, Detail: "must be a node name, a Send {\"node\", \"input\"} or a list of them, not " + kindOf(v)}}
	}
}

// UnmarshalJSON accepts what Decode accepts.
func (g *Goto) UnmarshalJSON(b []byte) error { return decodeInto(b, g) }

// MarshalJSON writes a name as a string and a Send as {"node", "input"}.
func (t GotoTarget) MarshalJSON() ([]byte, error) {
	if !t.Send {
		return json.Marshal(t.Node)
	}
	in := t.Input
	if len(in) == 0 {
		in = json.RawMessage("null")
	}
	return json.Marshal(struct {
		Node  string          `json:"node"`
		Input json.RawMessage `json:"input"`
	}{t.Node, in})
}

// Update is command.update: an object of state keys to values, or a list
// of [key, value] pairs (which may repeat a key, applied in order).
// Trellis honours it as a state update by the resumed node.
type Update struct {
	// Pairs are the updates in order (an object's keys sorted).
	Pairs []UpdatePair
	// List is set when the update came as pairs; it is written back so.
	List bool
}

// UpdatePair is one state key and the value written to it.
type UpdatePair struct {
	Key   string
	Value json.RawMessage
}

func (u *Update) decodeWire(ptr string, v any) []FieldError {
	switch x := v.(type) {
	case map[string]any:
		out := Update{Pairs: make([]UpdatePair, 0, len(x))}
		for _, k := range sortedKeys(x) {
			b, _ := json.Marshal(x[k])
			out.Pairs = append(out.Pairs, UpdatePair{Key: k, Value: b})
		}
		*u = out
	case []any:
		var errs []FieldError
		out := Update{List: true, Pairs: make([]UpdatePair, 0, len(x))}
		for i, e := range x {
			p := ptr + "/" + strconv.Itoa(i)
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				errs = append(errs, FieldError{Pointer: p, Detail: "must be a [key, value] pair"})
				continue
			}
			k, ok := pair[0].(string)
			if !ok || k == "" {
				errs = append(errs, FieldError{Pointer: p + "/0", Detail: "must be a state key (a non-empty string), not " + kindOf(pair[0])})
				continue
			}
			b, _ := json.Marshal(pair[1])
			out.Pairs = append(out.Pairs, UpdatePair{Key: k, Value: b})
		}
		*u = out
		return errs
	default:
		return []FieldError{{Pointer: ptr, Detail: "must be an object of state keys, or a list of [key, value] pairs, not " + kindOf(v)}}
	}
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (u *Update) UnmarshalJSON(b []byte) error { return decodeInto(b, u) }

// MarshalJSON writes the shape the update came in.
func (u Update) MarshalJSON() ([]byte, error) {
	if u.List {
		out := make([][2]json.RawMessage, len(u.Pairs))
		for i, p := range u.Pairs {
			k, _ := json.Marshal(p.Key)
			out[i] = [2]json.RawMessage{k, rawOrNull(p.Value)}
		}
		return json.Marshal(out)
	}
	m := make(map[string]json.RawMessage, len(u.Pairs))
	for _, p := range u.Pairs {
		m[p.Key] = rawOrNull(p.Value)
	}
	return json.Marshal(m)
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// TTL is a thread's time to live: minutes, or {"ttl": minutes, "strategy":
// "delete" | "keep_latest"} (the SDK always sends the object). Trellis
// honours it: that long after the thread's last activity the sweeper
// deletes it, or prunes it to its latest checkpoint.
type TTL struct {
	// Minutes is the time to live; more than zero.
	Minutes float64
	// Strategy is what happens when it runs out ("delete" or
	// "keep_latest").
	Strategy TTLStrategy
}

func (t *TTL) decodeWire(ptr string, v any) []FieldError {
	var n any
	strategy := TTLStrategy("delete")
	switch x := v.(type) {
	case json.Number:
		n = x
	case map[string]any:
		var ok bool
		if n, ok = x["ttl"]; !ok {
			return []FieldError{{Pointer: ptr + "/ttl", Detail: "required field is missing (minutes)"}}
		}
		ptr += "/ttl"
		if s, ok := x["strategy"]; ok && s != nil {
			switch s {
			case "delete", "keep_latest":
				strategy = TTLStrategy(s.(string))
			default:
				return []FieldError{{Pointer: ptr[:len(ptr)-4] + "/strategy", Detail: fmt.Sprintf("must be \"delete\" or \"keep_latest\", not %v", s)}}
			}
		}
	default:
		return []FieldError{{Pointer: ptr, Detail: "must be minutes (a number) or {\"ttl\": minutes, \"strategy\": \"delete\"}, not " + kindOf(v)}}
	}
	num, ok := n.(json.Number)
	if !ok {
		return []FieldError{{Pointer: ptr, Detail: "must be minutes (a number), not " + kindOf(n)}}
	}
	f, err := num.Float64()
	if err != nil || f <= 0 || f > 525600*100 {
		return []FieldError{{Pointer: ptr, Detail: fmt.Sprintf("must be more than 0 and at most 100 years in minutes, not %s", num)}}
	}
	*t = TTL{Minutes: f, Strategy: strategy}
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (t *TTL) UnmarshalJSON(b []byte) error { return decodeInto(b, t) }

// MarshalJSON writes the object form.
func (t TTL) MarshalJSON() ([]byte, error) {
	s := t.Strategy
	if s == "" {
		s = "delete"
	}
	return json.Marshal(struct {
		TTL      float64     `json:"ttl"`
		Strategy TTLStrategy `json:"strategy"`
	}{t.Minutes, s})
}

// StoreIndex is a store item's index setting: false (do not index it) or
// the list of field paths to index; null or absent means the store's
// default. A server without store.index ignores it.
type StoreIndex struct {
	// Disabled is set for false.
	Disabled bool
	// Fields are the paths to index (when not Disabled).
	Fields []string
}

func (s *StoreIndex) decodeWire(ptr string, v any) []FieldError {
	switch x := v.(type) {
	case bool:
		if x {
			return []FieldError{{Pointer: ptr, Detail: "must be false or a list of field paths (true is not an index setting; leave it out for the default)"}}
		}
		*s = StoreIndex{Disabled: true}
	case []any:
		out := StoreIndex{Fields: make([]string, 0, len(x))}
		for i, e := range x {
			f, ok := e.(string)
			if !ok {
				return []FieldError{{Pointer: ptr + "/" + strconv.Itoa(i), Detail: "must be a field path (a string), not " + kindOf(e)}}
			}
			out.Fields = append(out.Fields, f)
		}
		*s = out
	default:
		return []FieldError{{Pointer: ptr, Detail: "must be false or a list of field paths, not " + kindOf(v)}}
	}
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (s *StoreIndex) UnmarshalJSON(b []byte) error { return decodeInto(b, s) }

// MarshalJSON writes false or the list.
func (s StoreIndex) MarshalJSON() ([]byte, error) {
	if s.Disabled {
		return []byte("false"), nil
	}
	if s.Fields == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Fields)
}

// StateSelectField is a field a thread state may be limited to: one of
// values, next, tasks, checkpoint, metadata, created_at, parent_checkpoint,
// interrupts, or "values.<key>" for one state key.
type StateSelectField string

// stateSelectFields are the plain values of StateSelectField.
var stateSelectFields = []string{"values", "next", "tasks", "checkpoint", "metadata", "created_at", "parent_checkpoint", "interrupts"}

func (f *StateSelectField) decodeWire(ptr string, v any) []FieldError {
	s, ok := v.(string)
	if !ok {
		return []FieldError{{Pointer: ptr, Detail: "must be a state field name (a string), not " + kindOf(v)}}
	}
	if !slices.Contains(stateSelectFields, s) && (!strings.HasPrefix(s, "values.") || len(s) == len("values.")) {
		return []FieldError{{Pointer: ptr, Detail: fmt.Sprintf("%q is not a state field; use one of %s, or \"values.<key>\"", s, quoteList(stateSelectFields))}}
	}
	*f = StateSelectField(s)
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (f *StateSelectField) UnmarshalJSON(b []byte) error { return decodeInto(b, f) }

// Xray is the graph query's xray: true/false (include subgraphs or not) or
// a depth. Trellis honours it.
type Xray struct {
	// Depth is how many levels of subgraphs to include: 0 is none, -1 all.
	Depth int
}

func (x *Xray) decodeWire(ptr string, v any) []FieldError {
	bad := []FieldError{{Pointer: ptr, Detail: fmt.Sprintf("must be true, false or a depth (a whole number of at least 0), not %v", v)}}
	switch y := v.(type) {
	case bool:
		*x = Xray{Depth: map[bool]int{true: -1, false: 0}[y]}
	case string: // from the query string
		switch strings.ToLower(y) {
		case "true":
			*x = Xray{Depth: -1}
		case "false", "":
			*x = Xray{}
		default:
			n, err := strconv.Atoi(y)
			if err != nil || n < 0 {
				return bad
			}
			*x = Xray{Depth: n}
		}
	case json.Number:
		n, err := strconv.Atoi(string(y))
		if err != nil || n < 0 {
			return bad
		}
		*x = Xray{Depth: n}
	default:
		return bad
	}
	return nil
}

// UnmarshalJSON accepts what Decode accepts.
func (x *Xray) UnmarshalJSON(b []byte) error { return decodeInto(b, x) }

// MarshalJSON writes true, false or the depth.
func (x Xray) MarshalJSON() ([]byte, error) {
	switch {
	case x.Depth < 0:
		return []byte("true"), nil
	case x.Depth == 0:
		return []byte("false"), nil
	}
	return []byte(strconv.Itoa(x.Depth)), nil
}
