package llm

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// fillFunc sets dst, a settable value of the type it was made for, from a
// checked JSON tree (see treeParser) the way json.Unmarshal would set it
// from the same JSON. It returns false when it meets anything it leaves to
// encoding/json (a value encoding/json would reject, or a key it would
// match by case folding or ignore); the caller then zeroes dst and calls
// json.Unmarshal, so every rule and every error stays encoding/json's.
type fillFunc func(v any, dst reflect.Value) bool

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// filler returns the fillFunc of t, or nil when some type in t is decoded
// by rules the filler does not repeat: types with their own UnmarshalJSON
// or UnmarshalText (time.Time, json.RawMessage), embedded fields, the
// ",string" tag option, two fields with one JSON name, interfaces with
// methods, maps with keys that are not strings.
func filler(t reflect.Type) fillFunc {
	return fillerOf(t, map[reflect.Type]bool{})
}

func fillerOf(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	if visiting[t] || ownDecoding(t) {
		return nil
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Bool:
		return fillBool
	case reflect.String:
		if t == numberType {
			return fillNumber
		}
		return fillString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fillInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fillUint
	case reflect.Float32, reflect.Float64:
		return fillFloat
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return nil
		}
		return fillAny
	case reflect.Pointer:
		return pointerFiller(t, visiting)
	case reflect.Slice:
		return sliceFiller(t, visiting)
	case reflect.Array:
		return arrayFiller(t, visiting)
	case reflect.Map:
		return mapFiller(t, visiting)
	case reflect.Struct:
		return structFiller(t, visiting)
	}
	return nil
}

// ownDecoding reports whether encoding/json decodes t, or a pointer to
// it, with the type's own method.
func ownDecoding(t reflect.Type) bool {
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(unmarshalerType) || u.Implements(textUnmarshalerType) {
			return true
		}
	}
	return false
}

// A null leaves a bool, string, number, array or struct as it is, and
// sets a pointer, slice, map or interface to nil, as in encoding/json.

func fillBool(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		dst.SetBool(v)
		return true
	}
	return false
}

func fillString(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		dst.SetString(v)
		return true
	}
	return false
}

// fillNumber fills a json.Number from a number (a string is left to
// encoding/json, which checks that it holds a number).
func fillNumber(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case json.Number:
		dst.SetString(string(v))
		return true
	}
	return false
}

func fillInt(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || dst.OverflowInt(n) {
			return false
		}
		dst.SetInt(n)
		return true
	}
	return false
}

func fillUint(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case json.Number:
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil || dst.OverflowUint(n) {
			return false
		}
		dst.SetUint(n)
		return true
	}
	return false
}

func fillFloat(v any, dst reflect.Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case json.Number:
		n, err := strconv.ParseFloat(string(v), dst.Type().Bits())
		if err != nil || dst.OverflowFloat(n) {
			return false
		}
		dst.SetFloat(n)
		return true
	}
	return false
}

// fillAny fills an empty interface with what encoding/json puts there:
// numbers as float64, objects as map[string]any, arrays as []any. The
// tree is converted in place (it is not used after filling).
func fillAny(v any, dst reflect.Value) bool {
	if v == nil {
		dst.SetZero()
		return true
	}
	v, ok := plainJSON(v)
	if ok {
		dst.Set(reflect.ValueOf(v))
	}
	return ok
}

func plainJSON(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case []any:
		for i, e := range x {
			var ok bool
			if x[i], ok = plainJSON(e); !ok {
				return nil, false
			}
		}
	case map[string]any:
		for k, e := range x {
			var ok bool
			if x[k], ok = plainJSON(e); !ok {
				return nil, false
			}
		}
	}
	return v, true
}

func pointerFiller(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	elem := fillerOf(t.Elem(), visiting)
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) bool {
		if v == nil {
			dst.SetZero()
			return true
		}
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		return elem(v, dst.Elem())
	}
}

func sliceFiller(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	elem := fillerOf(t.Elem(), visiting)
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) bool {
		switch a := v.(type) {
		case nil:
			dst.SetZero()
			return true
		case []any:
			// A string for a []byte (base64) is left to encoding/json.
			s := reflect.MakeSlice(t, len(a), len(a))
			for i, e := range a {
				if !elem(e, s.Index(i)) {
					return false
				}
			}
			dst.Set(s)
			return true
		}
		return false
	}
}

func arrayFiller(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	elem := fillerOf(t.Elem(), visiting)
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) bool {
		switch a := v.(type) {
		case nil:
			return true
		case []any:
			// Items past the array's length are dropped, and missing ones
			// are zero.
			for i := range dst.Len() {
				if i >= len(a) {
					dst.Index(i).SetZero()
				} else if !elem(a[i], dst.Index(i)) {
					return false
				}
			}
			return true
		}
		return false
	}
}

func mapFiller(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	kt := t.Key()
	if kt.Kind() != reflect.String || ownDecoding(kt) {
		return nil
	}
	elem := fillerOf(t.Elem(), visiting)
	if elem == nil {
		return nil
	}
	return func(v any, dst reflect.Value) bool {
		switch m := v.(type) {
		case nil:
			dst.SetZero()
			return true
		case map[string]any:
			if dst.IsNil() {
				dst.Set(reflect.MakeMapWithSize(t, len(m)))
			}
			ev := reflect.New(t.Elem()).Elem()
			kv := reflect.New(kt).Elem()
			for k, e := range m {
				ev.SetZero()
				if !elem(e, ev) {
					return false
				}
				kv.SetString(k)
				dst.SetMapIndex(kv, ev)
			}
			return true
		}
		return false
	}
}

type fieldFill struct {
	name  string
	index int
	fill  fillFunc
}

func structFiller(t reflect.Type, visiting map[reflect.Type]bool) fillFunc {
	var fields []fieldFill
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opts != "" {
			var opt string
			opt, opts, _ = strings.Cut(opts, ",")
			if opt == "string" {
				return nil
			}
		}
		if !validTagName(name) {
			name = sf.Name
		}
		if names[name] {
			return nil
		}
		names[name] = true
		fill := fillerOf(sf.Type, visiting)
		if fill == nil {
			return nil
		}
		fields = append(fields, fieldFill{name: name, index: i, fill: fill})
	}
	return func(v any, dst reflect.Value) bool {
		switch m := v.(type) {
		case nil:
			return true
		case map[string]any:
			found := 0
			for _, f := range fields {
				e, ok := m[f.name]
				if !ok {
					continue
				}
				found++
				if !f.fill(e, dst.Field(f.index)) {
					return false
				}
			}
			// A key that names no field exactly: encoding/json matches it
			// by case folding, or ignores it.
			return found == len(m)
		}
		return false
	}
}

// validTagName reports whether encoding/json takes name from a json tag
// as the field's name (otherwise it uses the Go field name).
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}
