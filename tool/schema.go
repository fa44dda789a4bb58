package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// schema is a parameters schema ready to check arguments against.
type schema struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
	raw      json.RawMessage
	// walked: every keyword of the schema is one the checker's walk
	// enforces, so the library's validation can be skipped when the walk
	// finds nothing (it costs more than the rest of a call).
	walked bool
}

// typeSchemas caches the inferred schema of each Args type (reflect.Type →
// *inferred), so building many tools over one type infers it once.
var typeSchemas sync.Map

type inferred struct {
	s   *schema
	err error
}

// schemaFor infers the parameters schema of an arguments type. The type
// must describe a JSON object: a struct or a map with string keys.
func schemaFor(t reflect.Type) (*schema, error) {
	if v, ok := typeSchemas.Load(t); ok {
		in := v.(*inferred)
		return in.s, in.err
	}
	s, err := inferSchema(t)
	v, _ := typeSchemas.LoadOrStore(t, &inferred{s, err})
	in := v.(*inferred)
	return in.s, in.err
}

func inferSchema(t reflect.Type) (*schema, error) {
	if t == nil || t.Kind() == reflect.Interface {
		return nil, fmt.Errorf("the arguments type %v has no fixed shape; use a struct whose fields are the arguments", t)
	}
	if t.Kind() == reflect.Pointer {
		return nil, fmt.Errorf("the arguments type %v is a pointer; use the struct type %v itself", t, t.Elem())
	}
	root, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("infer the JSON schema of %v: %w", t, err)
	}
	if root.Type != "object" {
		return nil, fmt.Errorf("the arguments type %v is not a JSON object (its schema allows %s); use a struct whose fields are the arguments", t, typeList(allowedTypes(root)))
	}
	raw, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode the JSON schema of %v: %w", t, err)
	}
	return resolveSchema(root, raw)
}

// compileSchema prepares a tool's declared parameters schema. An empty
// schema means the tool takes no arguments it cares to check.
func compileSchema(raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	root := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, root); err != nil {
		return nil, fmt.Errorf("the parameters schema is not a valid JSON schema: %w", err)
	}
	switch root.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema":
	default:
		// The library validates only draft-07 and 2020-12 and refuses other
		// declared versions at every call; their common keywords mean the
		// same in 2020-12, so check them as that.
		root.Schema = ""
	}
	return resolveSchema(root, raw)
}

func resolveSchema(root *jsonschema.Schema, raw json.RawMessage) (*schema, error) {
	rs, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("prepare the parameters schema: %w", err)
	}
	return &schema{root: root, resolved: rs, raw: raw, walked: walkable(root)}, nil
}

// normalizeArgs turns the empty arguments some models send for a tool
// without parameters ("" or null) into an empty object.
func normalizeArgs(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// check validates arguments (already normalized) and returns the problem in
// words a model can act on, as an *ArgumentError for tool.
func (s *schema) check(tool string, raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return &ArgumentError{Tool: tool, Problem: fmt.Sprintf("the arguments are not valid JSON (%v); send a single JSON object", jsonProblem(err)), Err: err}
	}
	if _, ok := v.(map[string]any); !ok {
		return &ArgumentError{Tool: tool, Problem: fmt.Sprintf("the arguments must be a JSON object, not %s", describeType(v))}
	}
	if s == nil {
		return nil
	}
	var c checker
	c.walk(s.root, v, "")
	if len(c.problems) > 0 {
		return &ArgumentError{Tool: tool, Problem: strings.Join(c.problems, "; ")}
	}
	// The walk covers the keywords inferred schemas use; the library
	// checks everything else.
	if s.walked {
		return nil
	}
	if err := s.resolved.Validate(v); err != nil {
		return &ArgumentError{Tool: tool, Problem: libraryProblem(err), Err: err}
	}
	return nil
}

func jsonProblem(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	return err.Error()
}

// checker walks a value against a schema and collects problems.
type checker struct{ problems []string }

func (c *checker) addf(format string, args ...any) {
	if len(c.problems) < 10 {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

// field names a location for a message: "the arguments" at the root,
// otherwise a quoted path such as "items[2].name".
func field(path string) string {
	if path == "" {
		return "the arguments"
	}
	return strconv.Quote(path)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (c *checker) walk(s *jsonschema.Schema, v any, path string) {
	if s == nil {
		return
	}
	if isFalseSchema(s) {
		c.addf("%s is not allowed", field(path))
		return
	}
	if want := allowedTypes(s); len(want) > 0 {
		got := jsonTypeOf(v)
		if !typeAllowed(got, want) {
			c.addf("%s must be %s, not %s", field(path), typeList(want), describeValue(v))
			return
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonschema.Equal(e, v) }) {
		opts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			opts[i] = compactJSON(e)
		}
		c.addf("%s must be one of %s, not %s", field(path), strings.Join(opts, ", "), compactJSON(v))
		return
	}
	switch x := v.(type) {
	case float64:
		c.number(s, x, path)
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			c.addf("%s must be at least %s long; it has %d", field(path), plural(*s.MinLength, "character"), n)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			c.addf("%s must be at most %s long; it has %d", field(path), plural(*s.MaxLength, "character"), n)
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			c.addf("%s must have at least %s; it has %d", field(path), plural(*s.MinItems, "item"), len(x))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			c.addf("%s must have at most %s; it has %d", field(path), plural(*s.MaxItems, "item"), len(x))
		}
		if s.Items != nil && len(s.PrefixItems) == 0 && len(s.ItemsArray) == 0 {
			for i, e := range x {
				c.walk(s.Items, e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	case map[string]any:
		c.object(s, x, path)
	}
}

func (c *checker) number(s *jsonschema.Schema, x float64, path string) {
	switch {
	case s.Minimum != nil && x < *s.Minimum:
		c.addf("%s must be at least %s, not %s", field(path), num(*s.Minimum), num(x))
	case s.Maximum != nil && x > *s.Maximum:
		c.addf("%s must be at most %s, not %s", field(path), num(*s.Maximum), num(x))
	case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
		c.addf("%s must be greater than %s, not %s", field(path), num(*s.ExclusiveMinimum), num(x))
	case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
		c.addf("%s must be less than %s, not %s", field(path), num(*s.ExclusiveMaximum), num(x))
	}
}

func (c *checker) object(s *jsonschema.Schema, x map[string]any, path string) {
	for _, name := range s.Required {
		if _, ok := x[name]; !ok {
			desc := ""
			if p := s.Properties[name]; p != nil {
				if t := allowedTypes(p); len(t) > 0 {
					desc = " (" + typeList(t) + ")"
				}
			}
			c.addf("missing required field %s%s", strconv.Quote(join(path, name)), desc)
		}
	}
	for _, name := range propertyNames(s) {
		if val, ok := x[name]; ok {
			c.walk(s.Properties[name], val, join(path, name))
		}
	}
	if s.AdditionalProperties == nil || len(s.PatternProperties) > 0 {
		return
	}
	var extra []string
	for name := range x {
		if _, ok := s.Properties[name]; !ok {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	if isFalseSchema(s.AdditionalProperties) {
		if len(extra) == 0 {
			return
		}
		allowed := "it takes no fields"
		if names := propertyNames(s); len(names) > 0 {
			q := make([]string, len(names))
			for i, n := range names {
				q[i] = strconv.Quote(n)
			}
			allowed = "the allowed fields are " + strings.Join(q, ", ")
		}
		where := ""
		if path != "" {
			where = " in " + field(path)
		}
		q := make([]string, len(extra))
		for i, n := range extra {
			q[i] = strconv.Quote(n)
		}
		noun := "field"
		if len(extra) > 1 {
			noun = "fields"
		}
		c.addf("unknown %s %s%s; %s", noun, strings.Join(q, ", "), where, allowed)
		return
	}
	for _, name := range extra {
		c.walk(s.AdditionalProperties, x[name], join(path, name))
	}
}

// walkedFields are the fields of jsonschema.Schema that the walk enforces
// or that validation ignores (annotations). A schema using any other field
// is left to the library; a field added by a later library version is too.
var walkedFields = map[string]bool{
	"Schema": true, "Comment": true, "Title": true, "Description": true, "Default": true,
	"Deprecated": true, "ReadOnly": true, "WriteOnly": true, "Examples": true, "Format": true,
	"Extra": true, "PropertyOrder": true, "Type": true, "Types": true, "Enum": true,
	"Minimum": true, "Maximum": true, "ExclusiveMinimum": true, "ExclusiveMaximum": true,
	"MinLength": true, "MaxLength": true, "MinItems": true, "MaxItems": true, "Items": true,
	"Required": true, "Properties": true, "AdditionalProperties": true,
}

// walkable reports whether the walk alone enforces all of s.
func walkable(s *jsonschema.Schema) bool {
	if s == nil {
		return true
	}
	if isFalseSchema(s) {
		return true
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if !walkedFields[v.Type().Field(i).Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	for _, p := range s.Properties {
		if !walkable(p) {
			return false
		}
	}
	return walkable(s.Items) && walkable(s.AdditionalProperties)
}

// propertyNames lists a schema's properties in declaration order when
// known, else sorted.
func propertyNames(s *jsonschema.Schema) []string {
	if len(s.PropertyOrder) == len(s.Properties) {
		return s.PropertyOrder
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// isFalseSchema reports whether s matches nothing ({"not": {}}, which is
// how the library represents false).
func isFalseSchema(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

func allowedTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func typeAllowed(got string, want []string) bool {
	return slices.Contains(want, got) || got == "integer" && slices.Contains(want, "number")
}

func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(x); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

var typeNames = map[string]string{
	"null":    "null",
	"boolean": "a boolean",
	"integer": "an integer",
	"number":  "a number",
	"string":  "a string",
	"array":   "an array",
	"object":  "an object",
}

func typeName(t string) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return t
}

// typeList phrases allowed types: "a string", "an array or null".
func typeList(ts []string) string {
	// Put null last: "an array or null" reads better than "null or an array".
	sorted := slices.Clone(ts)
	slices.SortStableFunc(sorted, func(a, b string) int {
		switch {
		case a == "null" && b != "null":
			return 1
		case b == "null" && a != "null":
			return -1
		}
		return 0
	})
	names := make([]string, len(sorted))
	for i, t := range sorted {
		names[i] = typeName(t)
	}
	return strings.Join(names, " or ")
}

func describeType(v any) string { return typeName(jsonTypeOf(v)) }

// describeValue phrases a wrong value: `a string ("3")`.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%s (%s)", describeType(v), clip(compactJSON(v), 40))
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// libraryProblem rewrites a jsonschema-go validation error ("validating
// root: validating /properties/a: pattern: ...") as "a": pattern: ....
func libraryProblem(err error) string {
	msg := err.Error()
	loc := ""
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		loc = msg[len("validating "):i]
		msg = msg[i+2:]
	}
	path := pointerPath(loc)
	if path == "" {
		return msg
	}
	return strconv.Quote(path) + ": " + msg
}

// pointerPath turns a schema pointer ("/properties/a/items/properties/b")
// into an argument path ("a[].b").
func pointerPath(ptr string) string {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(segs[i+1])
				i++
			}
		case "items":
			b.WriteString("[]")
		}
	}
	return b.String()
}
