// Package stateschema gives the JSON Schema of one graph state key's Go
// type, as the Agent-Server schemas route and the MCP tool listing show
// it. Types whose JSON form differs from their Go shape are mapped to
// their JSON form: raw JSON is any JSON value (not the byte array
// encoding/json would never produce), a message list is a list of
// LangChain message objects.
package stateschema

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/llm"
)

var (
	messagesType = reflect.TypeFor[[]llm.Message]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	timeType     = reflect.TypeFor[time.Time]()
)

// Key is the schema of a state key of Go type t. A type the schema
// inference cannot describe gets a schema with a description naming it.
func Key(t reflect.Type) *jsonschema.Schema {
	if t == messagesType {
		return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "object", Description: "a LangChain message"}}
	}
	s, err := jsonschema.ForType(t, Options())
	if err != nil {
		return &jsonschema.Schema{Description: "a value of Go type " + t.String()}
	}
	return s
}

// Options are the inference options Key uses, for callers that infer a
// schema of another Go value (a graph's context type).
func Options() *jsonschema.ForOptions {
	return &jsonschema.ForOptions{IgnoreInvalidTypes: true, TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		// Raw JSON is any JSON value, not the byte array it is in Go.
		rawType:  {},
		timeType: {Type: "string", Format: "date-time"},
	}}
}
