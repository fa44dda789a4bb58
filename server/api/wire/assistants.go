package wire

import (
	"encoding/json"
	"fmt"
)

// AssistantCreate is the body of POST /assistants.
type AssistantCreate struct {
	// GraphID is the registered graph the assistant runs. Required.
	GraphID string `json:"graph_id"`
	// AssistantID is the ID to create it under (a UUID is made when
	// absent).
	AssistantID string `json:"assistant_id,omitempty"`
	// Config is passed to the graph's constructor and merged under each
	// run's config. Honoured.
	Config *Config `json:"config,omitempty"`
	// Context is the default run context (an object). Honoured.
	Context json.RawMessage `json:"context,omitempty"`
	// Metadata is stored and searchable.
	Metadata Metadata `json:"metadata,omitempty"`
	// IfExists is what to do when AssistantID is taken (default "raise").
	IfExists IfExists `json:"if_exists,omitempty"`
	// Name is shown in listings (default: the graph ID).
	Name string `json:"name,omitempty"`
	// Description says what the assistant is for.
	Description string `json:"description,omitempty"`
}

// Validate checks the rules across fields.
func (b *AssistantCreate) Validate() []FieldError {
	errs := nonEmpty("/graph_id", b.GraphID, "a registered graph ID")
	errs = append(errs, idErrors("/assistant_id", b.AssistantID)...)
	errs = append(errs, b.Config.validate("/config")...)
	return append(errs, objectOrNull("/context", b.Context)...)
}

// AssistantPatch is the body of PATCH /assistants/{assistant_id}: the
// members given replace the latest version's, making a new version.
type AssistantPatch struct {
	// GraphID switches the assistant to another registered graph.
	GraphID string `json:"graph_id,omitempty"`
	// Config replaces the assistant's config (see Config).
	Config *Config `json:"config,omitempty"`
	// Context replaces the default run context (an object).
	Context json.RawMessage `json:"context,omitempty"`
	// Metadata replaces the assistant's metadata.
	Metadata Metadata `json:"metadata,omitempty"`
	// Name replaces the display name.
	Name string `json:"name,omitempty"`
	// Description says what the assistant is for.
	Description string `json:"description,omitempty"`
}

// Validate checks the rules across fields.
func (b *AssistantPatch) Validate() []FieldError {
	return append(b.Config.validate("/config"), objectOrNull("/context", b.Context)...)
}

// AssistantSearch is the body of POST /assistants/search. The answer is a
// list of Assistant; the X-Pagination-Next header carries the next offset
// when there are more.
type AssistantSearch struct {
	// GraphID keeps assistants of this graph.
	GraphID string `json:"graph_id,omitempty"`
	// Name filters by the display name.
	Name string `json:"name,omitempty"`
	// Metadata keeps those whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
	// SortBy and SortOrder order the results (default: created_at desc).
	SortBy    AssistantSortBy `json:"sort_by,omitempty"`
	SortOrder SortOrder       `json:"sort_order,omitempty"`
	// Select limits each assistant to these fields.
	Select []AssistantSelectField `json:"select,omitempty"`
}

// Validate checks limit and offset.
func (b *AssistantSearch) Validate() []FieldError { return pageErrors("", b.Limit, b.Offset) }

// AssistantCount is the body of POST /assistants/count; the answer is a
// bare JSON integer.
type AssistantCount struct {
	// Metadata keeps those whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// GraphID keeps assistants of this graph.
	GraphID string `json:"graph_id,omitempty"`
	// Name filters by the display name.
	Name string `json:"name,omitempty"`
}

// AssistantVersionsSearch is the body of POST /assistants/{assistant_id}/versions.
type AssistantVersionsSearch struct {
	// Metadata keeps those whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
}

// Validate checks limit and offset.
func (b *AssistantVersionsSearch) Validate() []FieldError { return pageErrors("", b.Limit, b.Offset) }

// AssistantSetLatest is the body of POST /assistants/{assistant_id}/latest.
type AssistantSetLatest struct {
	// Version becomes the latest. Required.
	Version int `json:"version"`
}

// Validate requires a positive version.
func (b *AssistantSetLatest) Validate() []FieldError {
	if b.Version < 1 {
		return []FieldError{{Pointer: "/version", Detail: fmt.Sprintf("must be a version number (1 or more), not %d", b.Version)}}
	}
	return nil
}

// AssistantDeleteQuery is the query of DELETE /assistants/{assistant_id}.
type AssistantDeleteQuery struct {
	// DeleteThreads also deletes threads whose metadata.assistant_id is
	// this assistant.
	DeleteThreads bool `json:"delete_threads,omitempty"`
}

// AssistantGraphQuery is the query of GET /assistants/{assistant_id}/graph.
type AssistantGraphQuery struct {
	Xray Xray `json:"xray,omitzero"`
}

// AssistantSubgraphsQuery is the query of GET .../subgraphs[/{namespace}].
type AssistantSubgraphsQuery struct {
	Recurse bool `json:"recurse,omitempty"`
}

// Assistant is an assistant as responses show it (its latest version).
type Assistant struct {
	AssistantID string `json:"assistant_id"`
	GraphID     string `json:"graph_id"`
	Config      Config `json:"config"`
	Context     any    `json:"context"`
	CreatedAt   Time   `json:"created_at"`
	UpdatedAt   Time   `json:"updated_at"`
	// Metadata is free-form JSON metadata.
	Metadata    Metadata `json:"metadata"`
	Version     int      `json:"version"`
	Name        string   `json:"name"`
	Description *string  `json:"description,omitempty"`
}

// AssistantVersion is one version of an assistant.
type AssistantVersion struct {
	AssistantID string `json:"assistant_id"`
	GraphID     string `json:"graph_id"`
	Config      Config `json:"config"`
	Context     any    `json:"context"`
	CreatedAt   Time   `json:"created_at"`
	// Metadata is free-form JSON metadata.
	Metadata    Metadata `json:"metadata"`
	Version     int      `json:"version"`
	Name        string   `json:"name"`
	Description *string  `json:"description,omitempty"`
}

// AssistantGraph is the answer of GET /assistants/{assistant_id}/graph.
type AssistantGraph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is one node of an AssistantGraph.
type GraphNode struct {
	ID string `json:"id"`
	// Name filters by the display name.
	Name     string `json:"name,omitempty"`
	Data     any    `json:"data,omitempty"`
	Metadata any    `json:"metadata,omitempty"`
}

// GraphEdge is one edge of an AssistantGraph.
type GraphEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Data        string `json:"data,omitempty"`
	Conditional bool   `json:"conditional,omitempty"`
}

// GraphSchema is the answer of GET /assistants/{assistant_id}/schemas, and
// each value of a Subgraphs answer: the JSON Schemas of the graph's input,
// output, state, config and context (absent when the graph has none).
type GraphSchema struct {
	GraphID       string          `json:"graph_id"`
	InputSchema   json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema  json.RawMessage `json:"output_schema,omitempty"`
	StateSchema   json.RawMessage `json:"state_schema,omitempty"`
	ConfigSchema  json.RawMessage `json:"config_schema,omitempty"`
	ContextSchema json.RawMessage `json:"context_schema,omitempty"`
}

// Subgraphs is the answer of GET .../subgraphs: namespace → schemas.
type Subgraphs map[string]GraphSchema

// objectOrNull checks that raw, when given, is a JSON object or null.
func objectOrNull(ptr string, raw json.RawMessage) []FieldError {
	if len(raw) > 0 && raw[0] != '{' && string(raw) != "null" {
		return []FieldError{{Pointer: ptr, Detail: "must be an object"}}
	}
	return nil
}
