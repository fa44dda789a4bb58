package spec

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// Info is the document's info object.
type Info struct {
	Title       string
	Version     string
	Description string
}

// refPrefix is where component schemas live.
const refPrefix = "#/components/schemas/"

// OpenAPI returns the OpenAPI 3.1 document of routes as indented JSON.
// Every named struct type of package wire that a route reaches, every enum
// and every many-shaped field type becomes a component schema, referenced
// by name; a struct's required members are those without omitempty, as
// for wire.Decode. LangGraph's bodies allow additional properties, Trellis's
// own (with a Strict method) do not, so the document says what the decoder
// does. An error means a type has no schema (a bug the tests catch).
func OpenAPI(info Info, routes []Route) ([]byte, error) {
	g, err := newGenerator(routes)
	if err != nil {
		return nil, err
	}
	paths := map[string]map[string]any{}
	for _, r := range routes {
		op, err := g.operation(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.MuxPattern(), err)
		}
		item := paths[r.Pattern]
		if item == nil {
			item = map[string]any{}
			paths[r.Pattern] = item
		}
		m := strings.ToLower(r.Method)
		if _, dup := item[m]; dup {
			return nil, fmt.Errorf("%s is in the table twice", r.MuxPattern())
		}
		item[m] = op
	}
	var tags []map[string]string
	for _, r := range routes {
		if !slices.ContainsFunc(tags, func(t map[string]string) bool { return t["name"] == r.Tag }) {
			tags = append(tags, map[string]string{"name": r.Tag})
		}
	}
	infoObj := map[string]string{"title": info.Title, "version": info.Version}
	if info.Description != "" {
		infoObj["description"] = info.Description
	}
	doc := map[string]any{
		"openapi":    "3.1.0",
		"info":       infoObj,
		"tags":       tags,
		"paths":      paths,
		"components": map[string]any{"schemas": g.components, "securitySchemes": securitySchemes},
		// Either scheme; enforced once the server has an API key (or
		// auth.required), see docs/serve.md.
		"security": []map[string][]string{{"bearer": {}}, {"apiKey": {}}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// securitySchemes are the two ways to present an API key.
var securitySchemes = map[string]any{
	"bearer": map[string]string{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer KEY (a key from trellis keys create)"},
	"apiKey": map[string]string{"type": "apiKey", "in": "header", "name": "X-Api-Key", "description": "X-Api-Key: KEY, as the LangGraph SDK sends its apiKey"},
}

// generator turns Go types into schemas with references to components.
type generator struct {
	named      map[reflect.Type]string // component types → names
	components map[string]*jsonschema.Schema
}

// schemaProvider is implemented by wire types with several JSON shapes.
type schemaProvider interface{ JSONSchema() *jsonschema.Schema }

// enumType is implemented by wire's string enums.
type enumType interface{ Values() []string }

var (
	providerT = reflect.TypeFor[schemaProvider]()
	enumT     = reflect.TypeFor[enumType]()
	rawT      = reflect.TypeFor[json.RawMessage]()
	timeT     = reflect.TypeFor[time.Time]()
	strictT   = reflect.TypeFor[interface{ Strict() }]()
)

func isComponent(t reflect.Type) bool {
	if t.Name() == "" || t.Kind() == reflect.Pointer || t == rawT || t == timeT {
		return false
	}
	if t.Implements(providerT) || t.Implements(enumT) {
		return true
	}
	return t.Kind() == reflect.Struct
}

func newGenerator(routes []Route) (*generator, error) {
	g := &generator{named: map[reflect.Type]string{}, components: map[string]*jsonschema.Schema{}}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if isComponent(t) {
			g.named[t] = t.Name()
		}
		if (t.Kind() != reflect.Pointer && t.Implements(providerT)) || t == rawT || t == timeT {
			return
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(reflect.TypeFor[wire.Problem]())
	for _, r := range routes {
		walk(r.Body)
		walk(r.Response)
		walk(r.Errors)
		if r.Query != nil && r.Query.Kind() == reflect.Struct {
			for i := range r.Query.NumField() { // parameters, not a schema
				walk(r.Query.Field(i).Type)
			}
		}
	}
	names := map[string]reflect.Type{}
	for t, n := range g.named {
		if o, dup := names[n]; dup {
			return nil, fmt.Errorf("two component types are named %s: %s and %s", n, o, t)
		}
		names[n] = t
	}
	for t, n := range g.named {
		s, err := g.componentSchema(t)
		if err != nil {
			return nil, err
		}
		g.components[n] = s
	}
	return g, nil
}

// overrides are the TypeSchemas for jsonschema.ForType: a reference for
// every component but self, and the fixed schemas of raw JSON and times.
func (g *generator) overrides(self reflect.Type) map[reflect.Type]*jsonschema.Schema {
	m := map[reflect.Type]*jsonschema.Schema{
		rawT:  {},
		timeT: {Type: "string", Format: "date-time"},
	}
	for t, n := range g.named {
		if t != self {
			m[t] = &jsonschema.Schema{Ref: refPrefix + n}
		}
	}
	return m
}

func (g *generator) componentSchema(t reflect.Type) (*jsonschema.Schema, error) {
	switch {
	case t.Implements(providerT):
		return reflect.Zero(t).Interface().(schemaProvider).JSONSchema(), nil
	case t.Implements(enumT):
		vals := reflect.Zero(t).Interface().(enumType).Values()
		e := make([]any, len(vals))
		for i, v := range vals {
			e[i] = v
		}
		return &jsonschema.Schema{Type: "string", Enum: e}, nil
	case t.Kind() == reflect.Struct && t.NumField() == 1 && t.Field(0).Anonymous:
		// A wrapper (wire.BatchRun) has its embedded type's schema.
		return &jsonschema.Schema{Ref: refPrefix + g.named[t.Field(0).Type]}, nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: g.overrides(t)})
	if err != nil {
		return nil, err
	}
	fixRefs(s)
	for name, p := range s.Properties {
		if !slices.Contains(s.Required, name) {
			nullable(p) // the decoder reads null as absent, like the SDK's Optional<T>
		}
	}
	if !reflect.PointerTo(t).Implements(strictT) {
		s.AdditionalProperties = nil // LangGraph's shapes grow; readers and the decoder tolerate new members
	}
	return s, nil
}

// schemaOf is the schema of an inline (non-component) type.
func (g *generator) schemaOf(t reflect.Type) (*jsonschema.Schema, error) {
	if n, ok := g.named[t]; ok {
		return &jsonschema.Schema{Ref: refPrefix + n}, nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: g.overrides(nil)})
	if err != nil {
		return nil, err
	}
	fixRefs(s)
	return s, nil
}

// fixRefs rewrites what ForType makes of a nullable reference ({"$ref",
// "type": ["null"]}, which nothing matches) into anyOf [ref, null].
func fixRefs(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Ref != "" && (s.Type != "" || len(s.Types) > 0) {
		ref := s.Ref
		*s = jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Ref: ref}, {Type: "null"}}}
		return
	}
	for _, p := range s.Properties {
		fixRefs(p)
	}
	fixRefs(s.Items)
	fixRefs(s.AdditionalProperties)
	for _, a := range s.AnyOf {
		fixRefs(a)
	}
}

// nullable makes s also accept null.
func nullable(s *jsonschema.Schema) {
	switch {
	case s.Ref != "":
		ref := s.Ref
		*s = jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Ref: ref}, {Type: "null"}}}
	case s.Type != "":
		s.Types = []string{"null", s.Type}
		s.Type = ""
	case len(s.Types) > 0:
		if !slices.Contains(s.Types, "null") {
			s.Types = append([]string{"null"}, s.Types...)
		}
	case len(s.AnyOf) > 0:
		if !slices.ContainsFunc(s.AnyOf, func(a *jsonschema.Schema) bool { return a.Type == "null" }) {
			s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: "null"})
		}
	}
}

func (g *generator) operation(r Route) (map[string]any, error) {
	op := map[string]any{
		"operationId": r.OperationID,
		"summary":     r.Summary,
		"tags":        []string{r.Tag},
	}
	if r.Description != "" {
		op["description"] = r.Description
	}
	var params []map[string]any
	for _, p := range r.PathParams() {
		params = append(params, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]string{"type": "string"}})
	}
	if r.Query != nil {
		qs, err := g.queryParams(r.Query)
		if err != nil {
			return nil, err
		}
		params = append(params, qs...)
	}
	if params != nil {
		op["parameters"] = params
	}
	if r.Body != nil {
		s, err := g.schemaOf(r.Body)
		if err != nil {
			return nil, err
		}
		limit := r.BodyLimit
		if limit <= 0 {
			limit = wire.DefaultBodyLimit
		}
		desc := fmt.Sprintf("At most %d bytes; an empty body is {}.", limit)
		if r.MediaType != "" {
			desc = fmt.Sprintf("At most %d bytes.", limit)
		}
		op["requestBody"] = map[string]any{
			"required":    r.MediaType != "",
			"description": desc,
			"content":     map[string]any{mediaType(r): map[string]any{"schema": s}},
		}
	}
	responses := map[string]any{}
	success := map[string]any{"description": http.StatusText(r.Status)}
	switch {
	case r.Stream:
		success["content"] = map[string]any{"text/event-stream": map[string]any{"schema": map[string]string{"type": "string"}}}
	case r.Response != nil:
		s, err := g.schemaOf(r.Response)
		if err != nil {
			return nil, err
		}
		success["content"] = map[string]any{mediaType(r): map[string]any{"schema": s}}
	}
	if len(r.Headers) > 0 {
		h := map[string]any{}
		for name, d := range r.Headers {
			h[name] = map[string]any{"description": d, "schema": map[string]string{"type": "string"}}
		}
		success["headers"] = h
	}
	responses[strconv.Itoa(r.Status)] = success
	for _, s := range r.NoContent {
		responses[strconv.Itoa(s)] = map[string]any{"description": http.StatusText(s)}
	}
	problem := map[string]any{wire.ProblemContentType: map[string]any{"schema": map[string]string{"$ref": refPrefix + "Problem"}}}
	if r.Errors != nil {
		s, err := g.schemaOf(r.Errors)
		if err != nil {
			return nil, err
		}
		problem = map[string]any{"application/json": map[string]any{"schema": s}}
	}
	for _, s := range r.AllProblems() {
		responses[strconv.Itoa(s)] = map[string]any{"description": http.StatusText(s), "content": problem}
	}
	op["responses"] = responses
	if r.Public() {
		op["security"] = []any{} // no key needed
	}
	return op, nil
}

func (g *generator) queryParams(t reflect.Type) ([]map[string]any, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("query type %s is not a struct", t)
	}
	var out []map[string]any
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		s, err := g.schemaOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("query parameter %s: %w", name, err)
		}
		if f.Type.Kind() == reflect.Bool { // the SDK sends "1"/"0" as well as true/false
			s = &jsonschema.Schema{Type: "string", Enum: []any{"1", "0", "true", "false"}}
		}
		p := map[string]any{"name": name, "in": "query", "schema": s}
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			p["required"] = true
		}
		out = append(out, p)
	}
	return out, nil
}

// mediaType is the route's body and answer media type.
func mediaType(r Route) string {
	if r.MediaType != "" {
		return r.MediaType
	}
	return "application/json"
}
