package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DefaultBodyLimit is the body size limit, in bytes, of routes that do not
// set their own: 4 MiB, enough for a long conversation's input and far
// below what would hurt the server.
const DefaultBodyLimit = 4 << 20

// maxErrors caps how many problems one decode reports.
const maxErrors = 20

// Decode reads r's JSON body into a T, with these answers for bad input:
//   - a Content-Type other than JSON: 415;
//   - a body over limit bytes (limit <= 0 means DefaultBodyLimit): 413;
//   - malformed JSON: 400, with the byte offset of the fault;
//   - a value of the wrong type, an enum value that is not allowed, a
//     required field missing or a rule of the body broken (its Validate
//     method): 422, with each field's JSON Pointer (such as
//     "/command/goto/0/node").
//
// An empty body decodes as {} (the SDK sends no body to some POSTs, such as
// copy). Unknown object members are ignored in LangGraph's bodies (newer
// SDKs add fields; an old server must not refuse them) and rejected in
// Trellis's own bodies (types with the Strict marker method). JSON null
// leaves a field at its zero value (the SDK's Optional<T> is T | null |
// undefined); a json.RawMessage field keeps it as the literal null, so
// "input": null and no input at all can be told apart.
func Decode[T any](r *http.Request, limit int64) (T, *Problem) {
	var out T
	return out, DecodeInto(r, limit, &out)
}

// DecodeInto is Decode into dst, a non-nil pointer (for callers that hold
// a reflect.Type rather than a type parameter).
func DecodeInto(r *http.Request, limit int64, dst any) *Problem {
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return NewProblem(http.StatusUnsupportedMediaType, fmt.Sprintf("the body must be JSON (Content-Type: application/json), not %q", ct))
		}
	}
	var body []byte
	if mem, ok := r.Body.(*Body); ok {
		body = mem.rest()
		if int64(len(body)) > limit {
			return NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes, the limit for %s %s; send less (large inputs belong in the store or a file the graph reads)", limit, r.Method, r.URL.Path))
		}
	} else if r.Body != nil {
		b, err := ReadBody(r.Body, r.ContentLength, limit)
		if err != nil {
			return BadRequest("reading the body failed: " + err.Error())
		}
		if int64(len(b)) > limit {
			return NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes, the limit for %s %s; send less (large inputs belong in the store or a file the graph reads)", limit, r.Method, r.URL.Path))
		}
		body = b
	}
	return DecodeBytesInto(body, dst)
}

// DecodeBytes is Decode on a body already read; it applies no size limit.
func DecodeBytes[T any](body []byte) (T, *Problem) {
	var out T
	return out, DecodeBytesInto(body, &out)
}

// DecodeBytesInto is DecodeBytes into dst, a non-nil pointer.
func DecodeBytesInto(body []byte, dst any) *Problem {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return NewProblem(http.StatusInternalServerError, fmt.Sprintf("decoding into %T: need a non-nil pointer", dst))
	}
	tree, p := parseTree(body)
	if p != nil {
		return p
	}
	d := &walker{}
	d.assign("", tree, rv.Elem())
	if len(d.errs) == 0 {
		if v, ok := dst.(validator); ok {
			d.errs = v.Validate()
		}
	}
	return Invalid(d.errs...)
}

// parseTree parses one JSON value into maps, slices, strings, bools,
// json.Numbers and nils; an empty body is {}.
func parseTree(body []byte) (any, *Problem) {
	if len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, BadRequest(fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, BadRequest(fmt.Sprintf("malformed JSON: the body ends at byte %d in the middle of a value", len(body)))
		default:
			return nil, BadRequest("malformed JSON: " + err.Error())
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, BadRequest(fmt.Sprintf("malformed JSON at byte %d: more data after the JSON value; send exactly one value", dec.InputOffset()))
	}
	return tree, nil
}

// wireDecoder is implemented (on the pointer) by types whose JSON has
// several shapes (a string or a list, a name or a Send). v is the parsed
// value (see parseTree); errors carry pointers under ptr.
type wireDecoder interface {
	decodeWire(ptr string, v any) []FieldError
}

// enum is implemented by string types limited to a few values.
type enum interface{ Values() []string }

// validator is implemented by bodies with rules beyond their types (a
// limit range, one of two fields); it runs after a decode without type
// errors, and its pointers are from the body's root.
type validator interface{ Validate() []FieldError }

// strict is the marker of Trellis's own bodies, which reject unknown
// fields.
type strict interface{ Strict() }

// walker assigns a parsed JSON tree to a Go value, collecting errors.
// Where it is in the tree is a stack of steps under the pointer root; the
// JSON Pointer string is built only when an error or a wire decoder needs
// it, not for every value a decode visits.
type walker struct {
	errs []FieldError
	root string
	path []step
}

// step is one level under the root: a member key or (key "" and index
// >= 0) an array index.
type step struct {
	key   string
	index int // -1: a member named key
}

// start puts the walker at the root ptr, with room for a body's usual depth.
func (d *walker) start(ptr string) {
	d.root = ptr
	if d.path == nil {
		d.path = make([]step, 0, 8)
	}
	d.path = d.path[:0]
}

func (d *walker) push(key string, index int) { d.path = append(d.path, step{key, index}) }
func (d *walker) pop()                       { d.path = d.path[:len(d.path)-1] }

// pointer is the JSON Pointer of where the walker is ("/command/goto/0/node").
func (d *walker) pointer() string {
	if len(d.path) == 0 {
		return d.root
	}
	var b strings.Builder
	b.WriteString(d.root)
	for _, s := range d.path {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(escapePointer(s.key))
		}
	}
	return b.String()
}

func (d *walker) fail(format string, args ...any) {
	if len(d.errs) < maxErrors {
		d.errs = append(d.errs, FieldError{Pointer: d.pointer(), Detail: fmt.Sprintf(format, args...)})
	}
}

var (
	rawType  = reflect.TypeFor[json.RawMessage]()
	anyType  = reflect.TypeFor[any]()
	wireDecT = reflect.TypeFor[wireDecoder]()
	enumT    = reflect.TypeFor[enum]()
	strictT  = reflect.TypeFor[strict]()
)

// kindOf names a parsed JSON value's type for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// typeInfo is what the walker asks of a type on every value it assigns,
// worked out once per type: reflect's Implements and an enum's value list
// (a new slice per call) are not free.
type typeInfo struct {
	wireDec bool     // *T decodes itself (wireDecoder)
	strict  bool     // *T is a Strict body
	enum    []string // T's allowed values, when T is an enum
}

var typeCache sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if c, ok := typeCache.Load(t); ok {
		return c.(*typeInfo)
	}
	pt := reflect.PointerTo(t)
	info := &typeInfo{wireDec: pt.Implements(wireDecT), strict: pt.Implements(strictT)}
	if t.Kind() == reflect.String && t.Implements(enumT) {
		info.enum = reflect.Zero(t).Interface().(enum).Values()
	}
	c, _ := typeCache.LoadOrStore(t, info)
	return c.(*typeInfo)
}

// assign assigns v to rv; errors carry pointers under ptr.
func (d *walker) assign(ptr string, v any, rv reflect.Value) {
	d.start(ptr)
	d.assignAt(v, rv)
}

func (d *walker) assignAt(v any, rv reflect.Value) {
	t := rv.Type()
	ti := infoOf(t)
	if ti.wireDec {
		if v == nil && t.Kind() != reflect.Struct {
			return
		}
		for _, e := range rv.Addr().Interface().(wireDecoder).decodeWire(d.pointer(), v) {
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
		d.assignAt(v, nv.Elem())
		rv.Set(nv)
	case reflect.Interface:
		if t != anyType {
			d.fail("cannot decode into %s", t)
			return
		}
		rv.Set(reflect.ValueOf(plain(v)))
	case reflect.Struct:
		d.assignStructAt(v, rv, ti)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail("must be an object, not %s", kindOf(v))
			return
		}
		if t.Key().Kind() != reflect.String {
			d.fail("cannot decode into %s", t)
			return
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for _, k := range sortedKeys(m) {
			ev := reflect.New(t.Elem()).Elem()
			d.push(k, -1)
			d.assignAt(m[k], ev)
			d.pop()
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
		rv.Set(out)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			d.fail("must be an array, not %s", kindOf(v))
			return
		}
		out := reflect.MakeSlice(t, len(a), len(a))
		for i, ev := range a {
			d.push("", i)
			d.assignAt(ev, out.Index(i))
			d.pop()
		}
		rv.Set(out)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			d.fail("must be a string, not %s", kindOf(v))
			return
		}
		if ti.enum != nil && !slices.Contains(ti.enum, s) {
			d.fail("%q is not one of %s", s, quoteList(ti.enum))
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			d.fail("must be true or false, not %s", kindOf(v))
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			d.fail("must be an integer, not %s", kindOf(v))
			return
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil {
			if f, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && f == math.Trunc(f) && !errors.Is(err, strconv.ErrRange) && math.Abs(f) < 1<<53 {
				i, err = int64(f), nil // 10.0 is an integer too
			}
		}
		if err != nil || rv.OverflowInt(i) {
			d.fail("must be an integer between %d and %d, not %s", minInt(t.Bits()), maxInt(t.Bits()), n)
			return
		}
		rv.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			d.fail("must be a number, not %s", kindOf(v))
			return
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil {
			d.fail("the number %s is out of range", n)
			return
		}
		rv.SetFloat(f)
	default:
		d.fail("cannot decode into %s", t)
	}
}

func minInt(bits int) int64 { return -1 << (bits - 1) }
func maxInt(bits int) int64 { return 1<<(bits-1) - 1 }

// assignStruct assigns the object v to the struct rv; errors carry
// pointers under ptr.
func (d *walker) assignStruct(ptr string, v any, rv reflect.Value) {
	d.start(ptr)
	d.assignStructAt(v, rv, infoOf(rv.Type()))
}

// assignStructAt assigns v's members in the order of their names (so
// errors come in that order), then reports the required ones missing. A
// body that is not strict ignores members the struct lacks, so its known
// fields are visited in name order without sorting the object's keys.
func (d *walker) assignStructAt(v any, rv reflect.Value, ti *typeInfo) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("must be an object, not %s", kindOf(v))
		return
	}
	info := fieldsOf(rv.Type())
	if ti.strict {
		for _, k := range sortedKeys(m) {
			f, ok := info.byName[k]
			d.push(k, -1)
			if ok {
				d.assignAt(m[k], rv.Field(f.index))
			} else {
				d.fail("unknown field; the fields of this object are %s", quoteList(info.names))
			}
			d.pop()
		}
	} else {
		for _, f := range info.sorted {
			if e, ok := m[f.name]; ok {
				d.push(f.name, -1)
				d.assignAt(e, rv.Field(f.index))
				d.pop()
			}
		}
	}
	for _, f := range info.list {
		if f.required {
			if _, ok := m[f.name]; !ok {
				d.push(f.name, -1)
				d.fail("required field is missing")
				d.pop()
			}
		}
	}
}

// field is one JSON member of a struct.
type field struct {
	name     string
	index    int
	required bool // no omitempty/omitzero: the schema requires it too
}

type structInfo struct {
	list   []field
	byName map[string]field
	names  []string
	sorted []field // list in the order of the names (sort.Strings)
}

var fieldCache sync.Map // reflect.Type → *structInfo

// fieldsOf lists t's JSON members as encoding/json names them. Embedded
// structs are not used by the wire types and are not supported.
func fieldsOf(t reflect.Type) *structInfo {
	if c, ok := fieldCache.Load(t); ok {
		return c.(*structInfo)
	}
	info := &structInfo{byName: map[string]field{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := field{name: name, index: i, required: !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero")}
		info.list = append(info.list, f)
		info.byName[name] = f
		info.names = append(info.names, name)
	}
	for _, name := range slices.Sorted(maps.Keys(info.byName)) {
		info.sorted = append(info.sorted, info.byName[name])
	}
	c, _ := fieldCache.LoadOrStore(t, info)
	return c.(*structInfo)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// plain converts a parsed tree for an `any` field: numbers become float64,
// as encoding/json would decode them.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return string(x) // out of float64 range: keep the digits
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	}
	return v
}

// decodeInto runs the walker for a wire type's UnmarshalJSON, so json.Unmarshal
// accepts exactly what Decode accepts.
func decodeInto(data []byte, dst any) error {
	tree, p := parseTree(data)
	if p != nil {
		return p
	}
	d := &walker{}
	d.assign("", tree, reflect.ValueOf(dst).Elem())
	if len(d.errs) > 0 {
		return Invalid(d.errs...)
	}
	return nil
}

// refValue is the settable value behind a pointer.
func refValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

func jsonNumber(s string) json.Number { return json.Number(s) }
