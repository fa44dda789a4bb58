package llm

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Decode parses a reply once into an any tree (numbers as json.Number) to
// check it against the schema. For a "plain" T (see plainType) it then
// fills T from that tree instead of parsing the bytes a second time with
// json.Unmarshal. The fill does exactly what encoding/json does for the
// types it accepts, and gives up (fillValue returns false) on anything it
// would have to interpret differently: a value of another JSON kind, a
// number that does not fit, two keys naming one field, a key that differs
// from its field's name in more than ASCII case, or a duplicated key
// anywhere (the tree kept only its last value; encoding/json merges
// objects). Decode then clears T and runs json.Unmarshal as before, so every
// error message is still encoding/json's.

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fillField is one decodable field of a plain struct.
type fillField struct {
	name  string // the JSON name (tag or field name), ASCII
	index int    // the field's index in the struct
}

// fillFields lists a plain struct's decodable fields; at most 64, with
// names distinct in ASCII case.
type fillFields []fillField

var structFill sync.Map // reflect.Type -> fillFields

// plainType reports whether fillValue can fill a value of type t the way
// json.Unmarshal would: booleans, strings, integers, floats, pointers,
// slices (not []byte, which is base64) and string-keyed maps of plain
// types, and structs of plain fields without embedded fields, `,string`
// options or duplicate names, none with a custom JSON or text decoding.
func plainType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true // recursive: decided where it started
	}
	if t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType) ||
		reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Pointer:
		seen[t] = true
		return plainType(t.Elem(), seen)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return false
		}
		seen[t] = true
		return plainType(t.Elem(), seen)
	case reflect.Map:
		if t.Key() != reflect.TypeFor[string]() {
			return false
		}
		seen[t] = true
		return plainType(t.Elem(), seen)
	case reflect.Struct:
		seen[t] = true
		fields, ok := plainFields(t)
		if !ok {
			return false
		}
		for _, f := range fields {
			if !plainType(t.Field(f.index).Type, seen) {
				return false
			}
		}
		structFill.Store(t, fields)
		return true
	}
	return false
}

// plainFields lists t's decodable fields, or reports false when t has a
// field whose decoding plainType does not cover.
func plainFields(t reflect.Type) (fillFields, bool) {
	var fields fillFields
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for o := range strings.SplitSeq(opts, ",") {
			if o == "string" {
				return nil, false
			}
		}
		if name == "" {
			name = f.Name
		}
		if !simpleName(name) {
			return nil, false
		}
		for _, g := range fields {
			if strings.EqualFold(g.name, name) {
				return nil, false
			}
		}
		fields = append(fields, fillField{name: name, index: i})
	}
	if len(fields) > 64 {
		return nil, false
	}
	return fields, true
}

// simpleName reports a name of ASCII letters, digits, '_' and '-' (tag
// names encoding/json takes as they are).
func simpleName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// fillValue sets v (the zero value of a plain type) from x, a value of the
// tree Decode checked, as json.Unmarshal would from its text; false when it
// cannot be sure to (v is then partly set and must be cleared).
func fillValue(v reflect.Value, x any) bool {
	if x == nil { // null: nil pointers, slices and maps; others untouched
		return true
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !fillValue(p.Elem(), x) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Bool:
		b, ok := x.(bool)
		if ok {
			v.SetBool(b)
		}
		return ok
	case reflect.String:
		s, ok := x.(string)
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || v.OverflowInt(i) {
			return false
		}
		v.SetInt(i)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || v.OverflowUint(u) {
			return false
		}
		v.SetUint(u)
		return true
	case reflect.Float32, reflect.Float64:
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(n), v.Type().Bits())
		if err != nil || v.OverflowFloat(f) {
			return false
		}
		v.SetFloat(f)
		return true
	case reflect.Slice:
		a, ok := x.([]any)
		if !ok {
			return false
		}
		s := reflect.MakeSlice(v.Type(), len(a), len(a)) // [] is empty, not nil
		for i, e := range a {
			if !fillValue(s.Index(i), e) {
				return false
			}
		}
		v.Set(s)
		return true
	case reflect.Map:
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		out := reflect.MakeMapWithSize(v.Type(), len(m))
		et := v.Type().Elem()
		for k, e := range m {
			ev := reflect.New(et).Elem()
			if !fillValue(ev, e) {
				return false
			}
			out.SetMapIndex(reflect.ValueOf(k), ev)
		}
		v.Set(out)
		return true
	case reflect.Struct:
		m, ok := x.(map[string]any)
		if !ok {
			return false
		}
		f, ok := structFill.Load(v.Type())
		if !ok {
			return false
		}
		return fillStruct(v, f.(fillFields), m)
	}
	return false
}

// fillStruct sets v's fields from the object m; keys naming no field are
// ignored, as encoding/json does.
func fillStruct(v reflect.Value, fields fillFields, m map[string]any) bool {
	var used uint64
	for k, e := range m {
		i := fieldFor(fields, k)
		if i < 0 {
			if !asciiString(k) {
				return false // encoding/json folds some non-ASCII letters
			}
			continue
		}
		if used&(1<<i) != 0 {
			return false // two keys for one field: their order decides
		}
		used |= 1 << i
		if !fillValue(v.Field(fields[i].index), e) {
			return false
		}
	}
	return true
}

// fieldFor returns the index in fields of the field key names (exactly, or
// else in another ASCII case), or -1.
func fieldFor(fields fillFields, key string) int {
	for i, f := range fields {
		if f.name == key {
			return i
		}
	}
	for i, f := range fields {
		if len(f.name) == len(key) && strings.EqualFold(f.name, key) && asciiString(key) {
			return i
		}
	}
	return -1
}

func asciiString(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// members counts the object members in raw, valid JSON text: the colons
// outside strings.
func members(raw []byte) int {
	n, in := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == ':':
			n++
		}
	}
	return n
}

// treeMembers counts the object members in a decoded tree.
func treeMembers(x any) int {
	switch x := x.(type) {
	case map[string]any:
		n := len(x)
		for _, e := range x {
			n += treeMembers(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += treeMembers(e)
		}
		return n
	}
	return 0
}
