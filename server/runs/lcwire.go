package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// LCWire is the Wire of the LangGraph-compatible API: state keys that hold
// []llm.Message (MessageKeys, default "messages") are sent as LangChain
// messages, removals as {"type":"remove","id"} entries, and chunks as
// LangGraph's messages-tuple.
type LCWire struct {
	MessageKeys []string
}

func (w LCWire) keys() []string {
	if len(w.MessageKeys) == 0 {
		return []string{"messages"}
	}
	return w.MessageKeys
}

// State encodes a state with its message keys in LangChain's shape.
func (w LCWire) State(s graph.State) (json.RawMessage, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return w.rewrite(b, false)
}

// Update encodes a task's writes with message keys in LangChain's shape.
func (w LCWire) Update(u graph.Update) (json.RawMessage, error) {
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return w.rewrite(b, true)
}

// Chunk encodes a model chunk as LangGraph's messages-tuple.
func (w LCWire) Chunk(ev graph.Event, ref RunRef) (json.RawMessage, error) {
	return lcmsg.Tuple(ev, lcmsg.RunInfo{ThreadID: ref.ThreadID, RunID: ref.RunID, AssistantID: ref.AssistantID, GraphID: ref.GraphID})
}

// rewrite converts the message keys of an encoded state or update. In an
// update, "key:remove" entries become removal messages in key's list.
func (w LCWire) rewrite(b []byte, update bool) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	changed := false
	for _, k := range w.keys() {
		raw, ok := obj[k]
		removed, hasRemoved := obj[k+":remove"]
		if !ok && !(update && hasRemoved) {
			continue
		}
		var out []any
		if ok {
			var ms []llm.Message
			if err := json.Unmarshal(raw, &ms); err != nil {
				continue // not a message key after all: leave it as it is
			}
			for _, m := range lcmsg.FromLLMAll(ms) {
				out = append(out, m)
			}
		}
		if update && hasRemoved {
			var ids []string
			if err := json.Unmarshal(removed, &ids); err == nil {
				for _, id := range ids {
					out = append(out, lcmsg.Remove(id))
				}
				delete(obj, k+":remove")
			}
		}
		enc, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		obj[k], changed = enc, true
	}
	if !changed {
		return b, nil
	}
	return marshalOrdered(b, obj)
}

// marshalOrdered encodes obj keeping the key order of the original JSON
// (new keys last), so values read as the graph's schema lists them.
func marshalOrdered(orig []byte, obj map[string]json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(string(orig)))
	var order []string
	if _, err := dec.Token(); err == nil {
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				break
			}
			if k, ok := t.(string); ok {
				order = append(order, k)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				break
			}
		}
	}
	for k := range obj {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	var sb strings.Builder
	sb.WriteByte('{')
	first := true
	for _, k := range order {
		v, ok := obj[k]
		if !ok {
			continue
		}
		if !first {
			sb.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		sb.Write(kb)
		sb.WriteByte(':')
		sb.Write(v)
	}
	sb.WriteByte('}')
	return json.RawMessage(sb.String()), nil
}

// LCConverter reads input and update objects whose message keys (default
// "messages") hold LangChain messages (either the type or the role form,
// removals included) and the rest as the graph's own JSON.
func LCConverter(messageKeys ...string) Converter {
	if len(messageKeys) == 0 {
		messageKeys = []string{"messages"}
	}
	return func(g *graph.Graph, raw json.RawMessage) (graph.Update, error) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("must be a JSON object of state keys: %w", err)
		}
		var u graph.Update
		for _, k := range messageKeys {
			v, ok := obj[k]
			if !ok || !present(v) {
				continue
			}
			in, err := lcmsg.DecodeInput(v)
			if err != nil {
				var fe *lcmsg.FieldError
				if errors.As(err, &fe) {
					return nil, &fieldErr{pointer: "/" + k + pathPointer(fe.Path), err: err}
				}
				return nil, err
			}
			delete(obj, k)
			msgs, err := json.Marshal(in.Messages)
			if err != nil {
				return nil, err
			}
			if in.ReplaceAll {
				w, err := g.DecodeWrite(k, "overwrite", msgs)
				if err != nil {
					return nil, err
				}
				u = append(u, w)
				continue
			}
			if len(in.Remove) > 0 {
				ids, _ := json.Marshal(in.Remove)
				w, err := g.DecodeWrite(k, "remove", ids)
				if err != nil {
					return nil, err
				}
				u = append(u, w)
			}
			if len(in.Messages) > 0 {
				w, err := g.DecodeWrite(k, "set", msgs)
				if err != nil {
					return nil, err
				}
				u = append(u, w)
			}
		}
		rest, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		more, err := g.DecodeInput(rest)
		if err != nil {
			return nil, err
		}
		return append(u, more...), nil
	}
}

// fieldErr carries the JSON Pointer of a bad field inside an input object.
type fieldErr struct {
	pointer string
	err     error
}

func (e *fieldErr) Error() string        { return e.err.Error() }
func (e *fieldErr) Unwrap() error        { return e.err }
func (e *fieldErr) FieldPointer() string { return e.pointer }

// pathPointer turns lcmsg's "[2].tool_calls[0].args" into "/2/tool_calls/0/args".
func pathPointer(path string) string {
	var sb strings.Builder
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		sb.WriteString("/" + part)
	}
	return sb.String()
}
