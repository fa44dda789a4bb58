package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaFor returns the JSON schema of T, as jsonschema-go infers it
// (jsonschema.For), ready for ResponseFormat.Schema or ToolSpec.Parameters.
// It is computed once per type and cached; each call returns a fresh copy.
//
// What the inference gives, and so what Decode enforces:
//
//   - a struct is an object of its exported fields, named as encoding/json
//     names them; fields tagged json:"-" are left out;
//   - a field is required unless its json tag says omitempty or omitzero;
//     a required field may still be null when its Go type is a pointer, a
//     slice or an interface (types ["null", ...]);
//   - a struct allows no other fields ("additionalProperties": false), so an
//     unknown field, or a known one spelled in another case, is an error;
//   - a map with string keys is an object (never null, although a nil map
//     encodes as null) whose values all follow the element's schema;
//   - a fixed-size array must have exactly that many items;
//   - sized integers (int8, uint16, ...) carry their range as minimum and
//     maximum; time.Time is a string with format "date-time" (RFC 3339);
//   - a `jsonschema:"..."` struct tag becomes the field's description (it
//     must not start with "WORD=");
//   - a named type that implements SchemaProvider supplies its own schema
//     (an enum, a pattern), wherever it appears in T.
//
// Types with cycles, channels, functions, complex numbers or maps with
// non-string keys have no schema: SchemaFor reports which.
func SchemaFor[T any]() (json.RawMessage, error) {
	c, err := contractFor(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return bytes.Clone(c.raw), nil
}

// SchemaProvider is implemented by types that describe their own JSON
// schema, such as a string type limited to a few values:
//
//	type Priority string
//
//	func (Priority) JSONSchema() *jsonschema.Schema {
//		return &jsonschema.Schema{Type: "string", Enum: []any{"low", "medium", "high"}}
//	}
//
// SchemaFor calls JSONSchema once, on the zero value (or on a new value, for
// a pointer receiver), and uses the result wherever the type appears; a
// `jsonschema` tag on the field still sets the description. The schema
// should accept exactly the JSON that the type's decoding accepts.
type SchemaProvider interface {
	JSONSchema() *jsonschema.Schema
}

// contract is everything Decode and GenerateJSON need to know about a Go
// type, computed once.
type contract struct {
	typ      reflect.Type
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	raw      json.RawMessage // the schema as JSON
	info     map[*jsonschema.Schema]*schemaInfo
	// complete is set when the checker understands every keyword in the
	// schema, so jsonschema-go's validator need not run after it.
	complete bool
	// object is set when T is decoded from a JSON object found in the
	// reply (structs, maps, pointers to them, interfaces).
	object bool
	// format is the ResponseFormat to send, or nil when the schema's root
	// is not an object (providers only take objects).
	format *ResponseFormat
	shape  string // the compact shape restated in corrections
}

// schemaInfo holds what the checker precomputes for one (sub)schema.
type schemaInfo struct {
	required map[string]bool
	order    []string // property names: declaration order, then sorted
	pattern  *regexp.Regexp
	enum     []any // Enum values as the checker decodes JSON
	// props holds the schema of each property in order; undeclared the
	// required names that are not properties (usually none).
	props      []*jsonschema.Schema
	undeclared []string
	// openItems is set when the schema's items allow anything.
	openItems bool
}

type contractEntry struct {
	once sync.Once
	c    *contract
	err  error
}

var contracts sync.Map // reflect.Type -> *contractEntry

// contractFor returns the cached contract of t, building it on first use.
func contractFor(t reflect.Type) (*contract, error) {
	e, ok := contracts.Load(t)
	if !ok {
		e, _ = contracts.LoadOrStore(t, new(contractEntry))
	}
	ent := e.(*contractEntry)
	ent.once.Do(func() { ent.c, ent.err = buildContract(t) })
	return ent.c, ent.err
}

var (
	providerType = reflect.TypeFor[SchemaProvider]()
	timeType     = reflect.TypeFor[time.Time]()
	rawType      = reflect.TypeFor[json.RawMessage]()
)

func buildContract(t reflect.Type) (*contract, error) {
	fail := func(err error) (*contract, error) {
		return nil, fmt.Errorf("llm: no JSON schema for Go type %v: %w", t, err)
	}
	types := map[reflect.Type]*jsonschema.Schema{
		timeType: {Type: "string", Format: "date-time"},
		// Raw JSON is any JSON value, not the byte array it is in Go.
		rawType: {},
	}
	if err := providedSchemas(t, map[reflect.Type]bool{}, types); err != nil {
		return fail(err)
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return fail(err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return fail(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return fail(err)
	}
	c := &contract{
		typ:      t,
		schema:   s,
		resolved: resolved,
		raw:      raw,
		info:     map[*jsonschema.Schema]*schemaInfo{},
		complete: true,
	}
	if err := c.prepare(s, 0); err != nil {
		return fail(err)
	}
	switch {
	case s.Type == "object" || slices.Contains(s.Types, "object"):
		c.object = true
		c.format = &ResponseFormat{Name: formatName(t), Schema: raw}
	case s.Type == "" && s.Types == nil:
		c.object = true // any JSON object; ask for JSON mode without a schema
		c.format = &ResponseFormat{Name: formatName(t)}
	}
	c.shape = shapeOf(s, c.info)
	return c, nil
}

// providedSchemas collects the schemas of the named types in t (followed
// through fields, elements and pointers) that implement SchemaProvider.
func providedSchemas(t reflect.Type, seen map[reflect.Type]bool, out map[reflect.Type]*jsonschema.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	s, err := provided(t)
	if err != nil {
		return err
	}
	if s != nil {
		out[t] = s
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			if f.IsExported() || f.Anonymous {
				if err := providedSchemas(f.Type, seen, out); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array, reflect.Map:
		return providedSchemas(t.Elem(), seen, out)
	}
	return nil
}

// provided returns the schema t supplies through SchemaProvider, or nil.
func provided(t reflect.Type) (s *jsonschema.Schema, err error) {
	if t.Kind() == reflect.Interface {
		return nil, nil
	}
	var v reflect.Value
	switch {
	case t.Implements(providerType):
		v = reflect.Zero(t)
	case reflect.PointerTo(t).Implements(providerType):
		v = reflect.New(t)
	default:
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v.JSONSchema panicked: %v", t, r)
		}
	}()
	s = v.Interface().(SchemaProvider).JSONSchema()
	if s == nil {
		return nil, fmt.Errorf("%v.JSONSchema returned nil", t)
	}
	return s, nil
}

// formatName names a ResponseFormat after the Go type, within the
// characters and length providers accept.
func formatName(t reflect.Type) string {
	name := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, t.Name())
	if name = strings.Trim(name, "_"); name == "" {
		return "response"
	}
	return name[:min(len(name), 64)]
}

// maxSchemaDepth bounds how deep prepare and shapeOf follow a schema; an
// inferred schema is as deep as the type, far below it.
const maxSchemaDepth = 64

// prepare precomputes schemaInfo for s and its subschemas and decides
// whether the checker covers every keyword in them.
func (c *contract) prepare(s *jsonschema.Schema, depth int) error {
	if s == nil || c.info[s] != nil {
		return nil
	}
	if depth > maxSchemaDepth {
		c.complete = false
		return nil
	}
	inf := &schemaInfo{}
	c.info[s] = inf
	if !checkerCovers(s) {
		c.complete = false
	}
	if len(s.Required) > 0 {
		inf.required = make(map[string]bool, len(s.Required))
		for _, name := range s.Required {
			inf.required[name] = true
		}
	}
	inf.order = propertyOrder(s)
	inf.props = make([]*jsonschema.Schema, len(inf.order))
	for i, name := range inf.order {
		inf.props[i] = s.Properties[name]
	}
	for _, name := range s.Required {
		if _, declared := s.Properties[name]; !declared {
			inf.undeclared = append(inf.undeclared, name)
		}
	}
	inf.openItems = s.Items == nil || isTrue(s.Items)
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("pattern %q: %w", s.Pattern, err)
		}
		inf.pattern = re
	}
	for _, e := range s.Enum {
		v, err := canonical(e)
		if err != nil {
			return fmt.Errorf("enum value %v: %w", e, err)
		}
		inf.enum = append(inf.enum, v)
	}
	for _, name := range inf.order {
		if err := c.prepare(s.Properties[name], depth+1); err != nil {
			return err
		}
	}
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties} {
		if err := c.prepare(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkerCovers reports whether the checker in decode_check.go implements
// every validation keyword s uses (its subschemas are judged separately).
// Annotations (description, title, default, examples, format other than
// date-time, ...) do not constrain values and are ignored.
func checkerCovers(s *jsonschema.Schema) bool {
	return s.Ref == "" && s.DynamicRef == "" && s.Defs == nil && s.Definitions == nil &&
		s.AllOf == nil && s.AnyOf == nil && s.OneOf == nil && (s.Not == nil || isFalse(s)) &&
		s.If == nil && s.Then == nil && s.Else == nil &&
		s.DependencySchemas == nil && s.DependencyStrings == nil &&
		s.DependentRequired == nil && s.DependentSchemas == nil &&
		s.PrefixItems == nil && s.ItemsArray == nil && s.AdditionalItems == nil &&
		!s.UniqueItems && s.Contains == nil && s.MinContains == nil && s.MaxContains == nil &&
		s.UnevaluatedItems == nil && s.UnevaluatedProperties == nil &&
		s.MinProperties == nil && s.MaxProperties == nil &&
		s.PatternProperties == nil && s.PropertyNames == nil
}

// isFalse reports whether s is the schema that matches nothing (false).
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(s.Not).Elem().IsZero()
}

// isTrue reports whether s matches everything (true, or no keywords).
func isTrue(s *jsonschema.Schema) bool {
	return s == nil || reflect.ValueOf(s).Elem().IsZero()
}

// propertyOrder lists s's properties in declaration order, then any others
// sorted.
func propertyOrder(s *jsonschema.Schema) []string {
	if len(s.Properties) == 0 {
		return nil
	}
	order := make([]string, 0, len(s.Properties))
	for _, name := range s.PropertyOrder {
		if _, ok := s.Properties[name]; ok && !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	var rest []string
	for name := range s.Properties {
		if !slices.Contains(order, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(order, rest...)
}

// maxShape bounds the shape restated in a correction message.
const maxShape = 4000

// shapeOf renders s compactly for a model, TypeScript-like:
// {goal: string, steps: {id: string, deps?: string[]}[]}. "?" marks an
// optional field; null is left out of types that allow something else, to
// steer the model to the useful form; enums are listed as "a"|"b".
func shapeOf(s *jsonschema.Schema, info map[*jsonschema.Schema]*schemaInfo) string {
	var b strings.Builder
	writeShape(&b, s, info, 0)
	if b.Len() > maxShape {
		return b.String()[:maxShape] + " …(cut short)"
	}
	return b.String()
}

func writeShape(b *strings.Builder, s *jsonschema.Schema, info map[*jsonschema.Schema]*schemaInfo, depth int) {
	switch {
	case b.Len() > maxShape:
		return
	case depth > maxSchemaDepth || s != nil && s.Ref != "":
		b.WriteString("…")
		return
	case isTrue(s):
		b.WriteString("any")
		return
	case isFalse(s):
		b.WriteString("never")
		return
	case s.Const != nil:
		b.WriteString(literal(*s.Const))
		return
	case s.Enum != nil:
		for i, e := range s.Enum {
			if i > 0 {
				b.WriteString("|")
			}
			b.WriteString(literal(e))
		}
		return
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 1 {
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	}
	if len(types) == 0 {
		b.WriteString("any")
		return
	}
	for i, t := range types {
		if i > 0 {
			b.WriteString("|")
		}
		switch t {
		case "object":
			writeObjectShape(b, s, info, depth)
		case "array":
			var item strings.Builder
			writeShape(&item, s.Items, info, depth+1)
			if strings.ContainsAny(item.String(), "| ") && !strings.HasPrefix(item.String(), "{") {
				b.WriteString("(" + item.String() + ")[]")
			} else {
				b.WriteString(item.String() + "[]")
			}
		case "string":
			b.WriteString("string")
			if s.Format == "date-time" {
				b.WriteString(" (RFC 3339 date-time)")
			}
		default:
			b.WriteString(t)
		}
	}
}

func writeObjectShape(b *strings.Builder, s *jsonschema.Schema, info map[*jsonschema.Schema]*schemaInfo, depth int) {
	inf := info[s]
	if inf == nil || len(inf.order) == 0 {
		if s.AdditionalProperties != nil && !isFalse(s.AdditionalProperties) {
			b.WriteString("{[key: string]: ")
			writeShape(b, s.AdditionalProperties, info, depth+1)
			b.WriteString("}")
		} else {
			b.WriteString("{}")
		}
		return
	}
	b.WriteString("{")
	for i, name := range inf.order {
		if i > 0 {
			b.WriteString(", ")
		}
		if isIdent(name) {
			b.WriteString(name)
		} else {
			b.WriteString(strconv.Quote(name))
		}
		if !inf.required[name] {
			b.WriteString("?")
		}
		b.WriteString(": ")
		writeShape(b, s.Properties[name], info, depth+1)
	}
	b.WriteString("}")
}

// literal renders a JSON value compactly.
func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// isIdent reports whether name can be written bare in a path or shape.
func isIdent(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
