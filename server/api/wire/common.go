// Package wire holds the LangGraph-compatible HTTP wire of the agent
// service: a Go type for every request body, query and response the pinned
// JavaScript SDK (@langchain/langgraph-sdk 1.15.0) sends or reads, with
// field names exactly as on the wire; the decoder that turns a request into
// one of them with precise errors (Decode, DecodeQuery); and RFC 9457
// problem bodies (Problem).
//
// Each field's comment says what it means and whether Trellis honours it,
// checks it in the run service, or accepts and ignores it. LangGraph's
// bodies accept unknown fields (a newer SDK must work against this server);
// Trellis's own bodies (types with a Strict method) reject them.
//
// The package has no handlers: server/api registers them from the route
// table in server/api/spec, which also generates the OpenAPI document from
// these same types.
package wire

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Metadata is free-form JSON metadata on an assistant, thread, run or
// checkpoint; searches match it by containment (every given key equal).
type Metadata map[string]any

// Config is LangGraph's run config. Trellis reads configurable (the run
// context when context is absent, and thread_id/checkpoint_id where a
// checkpoint is addressed), tags (recorded on the run) and recursion_limit
// (the engine's step limit); other members (run_name, max_concurrency,
// callbacks, ...) are accepted and ignored.
type Config struct {
	// Tags label the run; recorded, not interpreted.
	Tags []string `json:"tags,omitempty"`
	// RecursionLimit is the most supersteps the run may take; Trellis uses
	// it as the engine's step limit (default 100, LangGraph's is 25).
	RecursionLimit *int `json:"recursion_limit,omitempty"`
	// Configurable holds the graph's configurable values; thread_id and
	// checkpoint_id inside it address a checkpoint (as in before, for
	// history).
	Configurable map[string]any `json:"configurable,omitempty"`
}

func (c *Config) validate(ptr string) []FieldError {
	if c == nil {
		return nil
	}
	if c.RecursionLimit != nil && (*c.RecursionLimit < 1 || *c.RecursionLimit > 10000) {
		return []FieldError{{Pointer: ptr + "/recursion_limit", Detail: fmt.Sprintf("must be between 1 and 10000, not %d", *c.RecursionLimit)}}
	}
	return nil
}

// CheckpointSelector addresses a checkpoint in a request; every member is
// optional (thread_id is implied by the path; an empty checkpoint_ns is the
// root graph; no checkpoint_id means the latest).
type CheckpointSelector struct {
	// ThreadID must match the thread in the path when given.
	ThreadID string `json:"thread_id,omitempty"`
	// CheckpointNS is the (sub)graph namespace, "" for the root.
	CheckpointNS string `json:"checkpoint_ns,omitempty"`
	// CheckpointID is the checkpoint's ID.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// CheckpointMap maps namespaces to checkpoint IDs (subgraph
	// checkpoints); accepted and ignored.
	CheckpointMap map[string]any `json:"checkpoint_map,omitempty"`
}

// Checkpoint identifies a checkpoint in a response.
type Checkpoint struct {
	ThreadID     string  `json:"thread_id"`
	CheckpointNS string  `json:"checkpoint_ns"`
	CheckpointID *string `json:"checkpoint_id"`
	// CheckpointMap is always null in Trellis (subgraph checkpoints are
	// addressed by namespace).
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

// Command resumes or steers a thread (LangGraph's Command). At least one
// member must be set. Trellis honours all three.
type Command struct {
	// Resume answers the pending interrupt(s): a value for the one pending
	// interrupt, or an object of interrupt ID → value. An answer that does
	// not fit the interrupt's response schema is a 422 from the run service,
	// and the thread keeps waiting.
	Resume json.RawMessage `json:"resume,omitempty"`
	// Update is written to the state as the resumed node's update.
	Update *Update `json:"update,omitempty"`
	// Goto sends the run to these nodes next.
	Goto Goto `json:"goto,omitempty"`
}

// HasResume reports whether the command carries an answer (null is none).
func (c *Command) HasResume() bool {
	return c != nil && len(c.Resume) > 0 && string(c.Resume) != "null"
}

func (c *Command) validate(ptr string) []FieldError {
	if c == nil {
		return nil
	}
	if !c.HasResume() && c.Update == nil && len(c.Goto) == 0 {
		return []FieldError{{Pointer: ptr, Detail: "a command needs resume, update or goto; to start from the current state send \"input\": null instead"}}
	}
	return nil
}

// Interrupt is a pending interrupt as responses show it.
type Interrupt struct {
	// ID answers it: command.resume may be {ID: value}.
	ID string `json:"id"`
	// Value is the payload the graph asked with.
	Value any `json:"value"`
	// ResponseSchema is the JSON Schema of the answer the graph expects,
	// when it gave one (the pinned SDK's Interrupt reads it).
	ResponseSchema json.RawMessage `json:"response_schema,omitempty"`
	// Namespace locates a subgraph's interrupt ([] or absent at the root).
	Namespace []string `json:"namespace,omitempty"`
}

// LangsmithTracer is sent by the SDK for LangSmith tracing; Trellis
// accepts and ignores it.
type LangsmithTracer struct {
	ProjectName string `json:"project_name,omitempty"`
	ExampleID   string `json:"example_id,omitempty"`
}

// Page bounds a listing.
const (
	DefaultLimit = 10
	MaxLimit     = 1000
)

// LimitOr returns *limit, or def when the client sent none.
func LimitOr(limit *int, def int) int {
	if limit == nil {
		return def
	}
	return *limit
}

// pageErrors checks limit and offset.
func pageErrors(ptr string, limit *int, offset int) []FieldError {
	var errs []FieldError
	if limit != nil && (*limit < 1 || *limit > MaxLimit) {
		errs = append(errs, FieldError{Pointer: ptr + "/limit", Detail: fmt.Sprintf("must be between 1 and %d, not %d", MaxLimit, *limit)})
	}
	if offset < 0 {
		errs = append(errs, FieldError{Pointer: ptr + "/offset", Detail: fmt.Sprintf("must be 0 or more, not %d", offset)})
	}
	return errs
}

// httpURL checks that s is an absolute http(s) URL.
func httpURL(ptr, s string) []FieldError {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []FieldError{{Pointer: ptr, Detail: fmt.Sprintf("must be an absolute http or https URL, not %q", s)}}
	}
	return nil
}

// nonEmpty checks a required string.
func nonEmpty(ptr, s, what string) []FieldError {
	if strings.TrimSpace(s) == "" {
		return []FieldError{{Pointer: ptr, Detail: "must be " + what + " (not empty)"}}
	}
	return nil
}

// Time is how timestamps are written: RFC 3339 with nanoseconds, UTC.
type Time = time.Time
