package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
)

// The walker as it was before its per-type caches and lazy pointers: the
// oracle the differential test compares the decoder with.

func oldDecodeBytesInto(body []byte, dst any) *Problem {
	rv := reflect.ValueOf(dst)
	tree, p := parseTree(body)
	if p != nil {
		return p
	}
	d := &oldWalker{}
	d.assign("", tree, rv.Elem())
	if len(d.errs) == 0 {
		if v, ok := dst.(validator); ok {
			d.errs = v.Validate()
		}
	}
	return Invalid(d.errs...)
}

// walker assigns a parsed JSON tree to a Go value, collecting errors.
type oldWalker struct{ errs []FieldError }

func (d *oldWalker) fail(ptr, format string, args ...any) {
	if len(d.errs) < maxErrors {
		d.errs = append(d.errs, FieldError{Pointer: ptr, Detail: fmt.Sprintf(format, args...)})
	}
}

func (d *oldWalker) assign(ptr string, v any, rv reflect.Value) {
	t := rv.Type()
	if reflect.PointerTo(t).Implements(wireDecT) {
		if v == nil && t.Kind() != reflect.Struct {
			return
		}
		for _, e := range rv.Addr().Interface().(wireDecoder).decodeWire(ptr, v) {
			if len(d.errs) < maxErrors {
				d.errs = append(d.errs, e)
			}
		}
		return
	}
	if t == rawType {
		b, _ := json.Marshal(v) // a parsed tree always marshals
		rv.SetBytes(b)
		return
	}
	if v == nil {
		return // null leaves the zero value
	}
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		d.assign(ptr, v, nv.Elem())
		rv.Set(nv)
	case reflect.Interface:
		if t != anyType {
			d.fail(ptr, "cannot decode into %s", t)
			return
		}
		rv.Set(reflect.ValueOf(plain(v)))
	case reflect.Struct:
		d.assignStruct(ptr, v, rv)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(ptr, "must be an object, not %s", kindOf(v))
			return
		}
		if t.Key().Kind() != reflect.String {
			d.fail(ptr, "cannot decode into %s", t)
			return
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for _, k := range sortedKeys(m) {
			ev := reflect.New(t.Elem()).Elem()
			d.assign(ptr+"/"+escapePointer(k), m[k], ev)
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
		rv.Set(out)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			d.fail(ptr, "must be an array, not %s", kindOf(v))
			return
		}
		out := reflect.MakeSlice(t, len(a), len(a))
		for i, ev := range a {
			d.assign(ptr+"/"+strconv.Itoa(i), ev, out.Index(i))
		}
		rv.Set(out)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail(ptr, "must be a string, not %s", kindOf(v))
			return
		}
		if t.Implements(enumT) {
			allowed := reflect.Zero(t).Interface().(enum).Values()
			if !slices.Contains(allowed, s) {
				d.fail(ptr, "%q is not one of %s", s, quoteList(allowed))
				return
			}
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail(ptr, "must be true or false, not %s", kindOf(v))
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			d.fail(ptr, "must be an integer, not %s", kindOf(v))
			return
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil {
			if f, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && f == math.Trunc(f) && !errors.Is(err, strconv.ErrRange) && math.Abs(f) < 1<<53 {
				i, err = int64(f), nil // 10.0 is an integer too
			}
		}
		if err != nil || rv.OverflowInt(i) {
			d.fail(ptr, "must be an integer between %d and %d, not %s", minInt(t.Bits()), maxInt(t.Bits()), n)
			return
		}
		rv.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			d.fail(ptr, "must be a number, not %s", kindOf(v))
			return
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil {
			d.fail(ptr, "the number %s is out of range", n)
			return
		}
		rv.SetFloat(f)
	default:
		d.fail(ptr, "cannot decode into %s", t)
	}
}

func (d *oldWalker) assignStruct(ptr string, v any, rv reflect.Value) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(ptr, "must be an object, not %s", kindOf(v))
		return
	}
	info := fieldsOf(rv.Type())
	isStrict := reflect.PointerTo(rv.Type()).Implements(reflect.TypeFor[strict]())
	for _, k := range sortedKeys(m) {
		f, ok := info.byName[k]
		if !ok {
			if isStrict {
				d.fail(ptr+"/"+escapePointer(k), "unknown field; the fields of this object are %s", quoteList(info.names))
			}
			continue
		}
		d.assign(ptr+"/"+escapePointer(k), m[k], rv.Field(f.index))
	}
	for _, f := range info.list {
		if f.required {
			if _, ok := m[f.name]; !ok {
				d.fail(ptr+"/"+escapePointer(f.name), "required field is missing")
			}
		}
	}
}
