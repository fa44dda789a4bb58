package aguiapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// decodeState decodes a state for diffing, numbers kept as written.
func decodeState(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// diff appends to ops the JSON Patch that turns a into b. Objects are
// compared key by key and lists element by element (a list that grew gets
// "add" operations for its new elements, as a thread's messages do), so a
// step that appends one message is one operation, not the whole list.
func diff(path string, a, b any, ops []PatchOp) []PatchOp {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range sortedKeys(av) {
			if _, ok := bv[k]; !ok {
				ops = append(ops, PatchOp{Op: "remove", Path: path + "/" + escape(k)})
			}
		}
		for _, k := range sortedKeys(bv) {
			old, ok := av[k]
			if !ok {
				ops = append(ops, PatchOp{Op: "add", Path: path + "/" + escape(k), Value: nullable(bv[k])})
				continue
			}
			ops = diff(path+"/"+escape(k), old, bv[k], ops)
		}
		return ops
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		for i := range n {
			ops = diff(path+"/"+strconv.Itoa(i), av[i], bv[i], ops)
		}
		for i := n; i < len(bv); i++ {
			ops = append(ops, PatchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: nullable(bv[i])})
		}
		for i := len(av) - 1; i >= n; i-- {
			ops = append(ops, PatchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		return ops
	}
	if !reflect.DeepEqual(a, b) {
		ops = append(ops, PatchOp{Op: "replace", Path: path, Value: nullable(b)})
	}
	return ops
}

// nullable keeps a JSON null a value of its operation: omitempty would
// drop a nil Value, and "replace" requires one.
func nullable(v any) any {
	if v == nil {
		return json.RawMessage("null")
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escape escapes a key for a JSON Pointer (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
