package openaiapi

import "encoding/json"

// ChatRequest is the body of POST /v1/chat/completions: OpenAI's chat
// completion request. Fields OpenAI defines that do not apply to an
// agent (temperature, top_p, seed, ...) are accepted and ignored: the
// assistant's configuration decides how its model samples.
type ChatRequest struct {
	// Model names the assistant: an assistant ID or a graph ID (its
	// first assistant), as GET /v1/models lists them.
	Model string `json:"model"`
	// Messages is the conversation as the client keeps it; the last one
	// is the new user turn.
	Messages []ChatMessage `json:"messages"`
	// Stream answers with server-sent chunks.
	Stream bool `json:"stream,omitempty"`
	// StreamOptions.IncludeUsage adds a last chunk with the usage.
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// Metadata may carry thread_id, the conversation's thread.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Tools are client-side (frontend) tools; see the documentation of
	// the wire for which assistants accept them.
	Tools []ChatTool `json:"tools,omitempty"`
	// N must be 1 (or absent): an agent run has one outcome.
	N *int `json:"n,omitempty"`
	// User is recorded on the run's metadata.
	User string `json:"user,omitempty"`
	// Trellis is the request's extension: a structured answer to the
	// question the thread waits on.
	Trellis *RequestExtension `json:"trellis,omitempty"`
}

// StreamOptions are OpenAI's stream options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// RequestExtension is the "trellis" member of a request.
type RequestExtension struct {
	// Answer answers the waiting interaction with a value of its answer
	// schema, skipping the parsing of the last message's text.
	Answer json.RawMessage `json:"answer,omitempty"`
	// InterruptID names the interaction answered, when several wait
	// (default: the first).
	InterruptID string `json:"interrupt_id,omitempty"`
}

// ChatMessage is one message of a conversation. Content is a string or a
// list of content parts, of which only text parts are read.
type ChatMessage struct {
	Role       string            `json:"role"`
	Content    any               `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCalls  []json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

// ChatCompletion is the answer of a non-streamed request.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *ChatUsage   `json:"usage,omitempty"`
	// Trellis is the answer's extension: the thread, the run, what waits
	// and what happened.
	Trellis *Extension `json:"trellis,omitempty"`
}

// ChatChoice is the one choice of a completion.
type ChatChoice struct {
	Index        int          `json:"index"`
	Message      ReplyMessage `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

// ReplyMessage is the assistant's message in a completion.
type ReplyMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is the reasoning the model streamed, where chat
	// apps look for it (DeepSeek's convention).
	ReasoningContent string  `json:"reasoning_content,omitempty"`
	Refusal          *string `json:"refusal"`
	// ToolCalls are calls of the request's client tools the run waits
	// on (finish_reason "tool_calls"); answer each with a tool message.
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// ChatToolCall is a call of a client tool, as OpenAI writes it.
type ChatToolCall struct {
	// Index is the call's place among the reply's calls (chunks only).
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall is a tool call's name and its arguments (JSON text).
type ChatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool is a client tool of a request, as OpenAI declares it.
type ChatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// ChatUsage is the token usage of the run's model calls.
type ChatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// ChatChunk is one server-sent chunk of a streamed completion.
type ChatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is set on the last chunk when stream_options.include_usage
	// asks for it, null on the others.
	Usage   *ChatUsage `json:"usage"`
	Trellis *Extension `json:"trellis,omitempty"`
}

// ChunkChoice is the one choice of a chunk.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is what a chunk adds to the message.
type Delta struct {
	Role             string `json:"role,omitempty"`
	Content          string `json:"content,omitempty"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// ToolCalls are the client tool calls the run waits on, in the
	// chunk before the last.
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// Extension is the "trellis" member of completions and chunks. In a
// completion every field that applies is set; a chunk carries thread_id
// and run_id on the first chunk, one event on progress chunks, and the
// status and interaction on the last.
type Extension struct {
	ThreadID string `json:"thread_id,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	// Status is "done", "waiting" (the run stopped for a person:
	// Interaction says for what), "tool_calls" (the run waits for the
	// results of client tool calls) or "reasked" (the answer did not
	// fit; nothing ran and the thread still waits).
	Status      string       `json:"status,omitempty"`
	Interaction *Interaction `json:"interaction,omitempty"`
	// Event is one progress event (chunks).
	Event *ProgressEvent `json:"event,omitempty"`
	// Events are the run's progress events (completions; at most
	// maxEvents, the first ones).
	Events []ProgressEvent `json:"events,omitempty"`
}

// ProgressEvent is a status line, a tool call or a tool result.
type ProgressEvent struct {
	// Type is "status", "tool_call" or "tool_result".
	Type string `json:"type"`
	// Text is the status line.
	Text string `json:"text,omitempty"`
	// Step is the plan step the event belongs to, if any.
	Step string `json:"step,omitempty"`
	// Tool, CallID, Arguments and Result describe a tool call or result.
	Tool      string          `json:"tool,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Data is a custom event the wire does not know, as the graph sent it.
	Data json.RawMessage `json:"data,omitempty"`
}

// Interaction is what the run waits for, structured: a question, a plan
// to confirm or a tool call to approve.
type Interaction struct {
	// ID is the interrupt's ID (RequestExtension.InterruptID).
	ID string `json:"id"`
	// Kind is "question", "plan_review", "tool_approval" or "other".
	Kind string `json:"kind"`
	// Mode is a question's mode: "text", "select" or "form".
	Mode     string          `json:"mode,omitempty"`
	Question string          `json:"question,omitempty"`
	Options  []string        `json:"options,omitempty"`
	Fields   json.RawMessage `json:"fields,omitempty"`
	Plan     json.RawMessage `json:"plan,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	// Arguments are the tool call's arguments awaiting approval.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	// Problems say why the previous answer was not taken.
	Problems []string `json:"problems,omitempty"`
	// Schema is the JSON Schema of a structured answer
	// (RequestExtension.Answer).
	Schema json.RawMessage `json:"schema,omitempty"`
	// Payload is the interrupt's value as the graph raised it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Others counts further interactions waiting after this one.
	Others int `json:"others,omitempty"`
}

// ModelList is the answer of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Model is one assistant, listed as a model.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Name and GraphID say which assistant the model is.
	Name    string `json:"name,omitempty"`
	GraphID string `json:"graph_id,omitempty"`
}

// ErrorResponse is OpenAI's error body.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
