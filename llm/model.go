package llm

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/trellis-agents/trellis/graph"
)

// Model is a chat model. Implementations live in provider/* (real APIs) and
// llm/llmtest (scripted); Retry, Fallback and WithTimeout wrap one.
//
// Generate and Stream must not modify the request. Stream yields chunks as
// they arrive and, on failure, a final non-nil error; breaking out of the
// loop must stop the request promptly. Feed the chunks to an Assembler (or
// use Call) to get the final message.
type Model interface {
	// Name identifies the model in errors and logs, as
	// "provider:model" ("openai:gpt-4o-mini").
	Name() string
	Generate(ctx context.Context, req *Request) (*Response, error)
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Request is what a model is asked. Only Messages is required; a nil or
// zero option means the provider's default.
type Request struct {
	Messages []Message
	Tools    []ToolSpec
	// ToolChoice says whether and which tools the model must call.
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows or forbids several tool calls in
	// one reply.
	ParallelToolCalls *bool
	Temperature       *float64
	TopP              *float64
	// MaxTokens bounds the reply's tokens (0: provider default; Anthropic
	// requires one, so its provider supplies a default).
	MaxTokens int
	Stop      []string
	// ResponseFormat asks for JSON (nil: free text).
	ResponseFormat *ResponseFormat
	// Reasoning turns reasoning ("thinking") on or off (nil: default).
	Reasoning *Reasoning
}

// Clone returns a copy of r whose slices can be changed without touching r.
func (r *Request) Clone() *Request {
	c := *r
	c.Messages = append([]Message(nil), r.Messages...)
	c.Tools = append([]ToolSpec(nil), r.Tools...)
	c.Stop = append([]string(nil), r.Stop...)
	return &c
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object (nil: no
	// arguments).
	Parameters json.RawMessage
}

// ToolChoiceMode says how the model may use tools.
type ToolChoiceMode string

// Tool choice modes. The zero value leaves it to the provider (auto).
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required" // some tool must be called
	ToolChoiceTool     ToolChoiceMode = "tool"     // the tool named in Name must be called
)

// ToolChoice says whether and which tools the model must call.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string // for ToolChoiceTool
}

// ResponseFormat asks for a JSON reply. With a Schema, providers that
// support structured output enforce it; without, the reply is any JSON
// object. Either way, decode it with Decode, which checks the schema again.
type ResponseFormat struct {
	// Name names the schema (providers require one; default "response").
	Name   string
	Schema json.RawMessage
	// Strict asks the provider to follow the schema exactly, where it can.
	Strict bool
}

// Reasoning turns reasoning on or off. Providers that take a token budget
// (Anthropic) use BudgetTokens; those that take an effort (OpenAI reasoning
// models) use Effort, or derive it from the budget.
type Reasoning struct {
	Enabled      bool
	BudgetTokens int
	// Effort is "low", "medium" or "high" (empty: derived or default).
	Effort string
}

// FinishReason says why the model stopped.
type FinishReason string

// Finish reasons, normalised across providers.
const (
	FinishStop      FinishReason = "stop"       // natural end or stop sequence
	FinishToolCalls FinishReason = "tool_calls" // the reply asks for tool calls
	FinishLength    FinishReason = "length"     // hit MaxTokens
	FinishFiltered  FinishReason = "content_filter"
)

// Usage is token usage; see graph.Usage.
type Usage = graph.Usage

// Response is a model's complete reply.
type Response struct {
	// Message is the assistant message (role RoleAssistant, with an ID).
	Message      Message
	Usage        Usage
	FinishReason FinishReason
	// Model is the model that answered, as the provider reports it.
	Model string
}

// Chunk is a piece of a streamed reply. Providers fill what they have; an
// Assembler puts chunks back together in any order.
type Chunk struct {
	Text      string
	Reasoning string
	// ReasoningSignature is a fragment of the reasoning's signature (see
	// Message.ReasoningSignature); fragments are concatenated.
	ReasoningSignature string
	ToolCalls          []ToolCallDelta
	// Usage, when set, is the usage so far: providers report it once at the
	// end, or in cumulative parts (Anthropic reports input tokens first and
	// output tokens last). The assembler keeps the field-wise maximum.
	Usage        *Usage
	FinishReason FinishReason
	Model        string
}

// ToolCallDelta is a fragment of a tool call. Index is the call's position
// in the reply as the provider numbers it; ID, Name and Arguments are
// fragments that may arrive in any order and in any number of pieces.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}
