package wire

import (
	"github.com/google/jsonschema-go/jsonschema"
)

// The JSON Schemas of the fields with several shapes, for the OpenAPI
// document (server/api/spec). Each accepts exactly what the type's decoder
// accepts, short of the checks a schema cannot say (a unique list, a rule
// across fields); the spec tests validate the SDK fixtures against them.

func str() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

func enumSchema(vals []string) *jsonschema.Schema {
	e := make([]any, len(vals))
	for i, v := range vals {
		e[i] = v
	}
	return &jsonschema.Schema{Type: "string", Enum: e}
}

// JSONSchema is a stream mode or a list of them.
func (StreamModes) JSONSchema() *jsonschema.Schema {
	one := enumSchema(StreamMode("").Values())
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{one, {Type: "array", Items: enumSchema(StreamMode("").Values())}}}
}

// JSONSchema is "*" or a list of node names.
func (NodeSelector) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", Const: jsonschema.Ptr[any]("*")},
		{Type: "array", Items: &jsonschema.Schema{Type: "string", MinLength: jsonschema.Ptr(1)}},
	}}
}

func gotoTargetSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string", MinLength: jsonschema.Ptr(1)},
		{Type: "object", Required: []string{"node"}, Properties: map[string]*jsonschema.Schema{
			"node":  {Type: "string", MinLength: jsonschema.Ptr(1)},
			"input": {},
		}},
	}}
}

// JSONSchema is a node name, a Send, or a list of them.
func (Goto) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{gotoTargetSchema(), {Type: "array", Items: gotoTargetSchema()}}}
}

// JSONSchema is an object or a list of [key, value] pairs.
func (Update) JSONSchema() *jsonschema.Schema {
	pair := &jsonschema.Schema{Type: "array", MinItems: jsonschema.Ptr(2), MaxItems: jsonschema.Ptr(2),
		PrefixItems: []*jsonschema.Schema{{Type: "string", MinLength: jsonschema.Ptr(1)}, {}}}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "object"}, {Type: "array", Items: pair}}}
}

// JSONSchema is minutes or {"ttl": minutes, "strategy": "delete" | "keep_latest"}.
func (TTL) JSONSchema() *jsonschema.Schema {
	minutes := &jsonschema.Schema{Type: "number", ExclusiveMinimum: jsonschema.Ptr(0.0)}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{minutes, {
		Type: "object", Required: []string{"ttl"},
		Properties: map[string]*jsonschema.Schema{"ttl": minutes, "strategy": {Types: []string{"null", "string"}, Enum: []any{"delete", "keep_latest", nil}}},
	}}}
}

// JSONSchema is false or a list of field paths.
func (StoreIndex) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "boolean", Const: jsonschema.Ptr[any](false)},
		{Type: "array", Items: str()},
	}}
}

// JSONSchema is a state field name or "values.<key>".
func (StateSelectField) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{enumSchema(stateSelectFields), {Type: "string", Pattern: `^values\..+`}}}
}

// JSONSchema is a boolean or a depth.
func (Xray) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "boolean"}, {Type: "integer", Minimum: jsonschema.Ptr(0.0)}}}
}
