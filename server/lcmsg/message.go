// Package lcmsg converts between Trellis's llm.Message and LangChain's
// message JSON, the form LangGraph's API, its SDK
// (@langchain/langgraph-sdk) and the chat front-ends built on it read and
// write: state values carry messages as {"type": "human"|"ai"|"system"|
// "tool", "content", "id", ...}, streamed tokens travel as AIMessageChunk
// JSON in [chunk, metadata] pairs, and removals as {"type": "remove", "id"}.
//
// FromLLM and ToLLM convert one message; Decode and DecodeInput read what
// clients send (either LangChain's "type" form or the OpenAI-like "role"
// form); FromChunk and Tuple build the messages-tuple stream event.
package lcmsg

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// LangChain message types, as the "type" field names them.
const (
	TypeHuman   = "human"
	TypeAI      = "ai"
	TypeSystem  = "system"
	TypeTool    = "tool"
	TypeRemove  = "remove"
	TypeAIChunk = "AIMessageChunk"
)

// RemoveAll is the id of a removal that clears the whole message list
// (LangGraph's REMOVE_ALL_MESSAGES).
const RemoveAll = "__remove_all__"

// Keys Trellis uses in additional_kwargs.
const (
	// KwargReasoning holds an AI message's reasoning text, where
	// LangChain's OpenAI-compatible integrations and the chat UIs put it.
	KwargReasoning = "reasoning_content"
	// KwargReasoningSignature holds the opaque signature some providers
	// attach to reasoning (a Trellis extension; LangChain has no field).
	KwargReasoningSignature = "reasoning_signature"
)

// Message is a message in LangChain's canonical JSON. Marshal it with
// encoding/json: it writes the fields LangChain writes for its Type, in
// LangChain's order, with empty lists and maps as [] and {} and absent
// values as null, so clients that index fields without checking find
// them. Message only encodes: read client JSON with ToLLM or DecodeInput,
// which accept every form clients send.
type Message struct {
	Type    string
	Content Content
	ID      string
	// Name is the author's name; for a tool message, the tool's name.
	Name             string
	AdditionalKwargs map[string]any
	ResponseMetadata map[string]any
	// AI messages and chunks only.
	ToolCalls        []ToolCall
	InvalidToolCalls []InvalidToolCall
	UsageMetadata    *UsageMetadata
	// AIMessageChunk only.
	ToolCallChunks []ToolCallChunk
	// Tool messages only. Status is "success" or "error".
	ToolCallID string
	Status     string
}

// Content is a message's content: Text when Parts is nil, else the list
// of parts.
type Content struct {
	Text  string
	Parts []Part
}

// MarshalJSON writes a string, or the list of parts.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts == nil {
		return json.Marshal(c.Text)
	}
	return json.Marshal(c.Parts)
}

// Part is one content part: {"type": "text", "text"} or {"type":
// "image_url", "image_url": {"url", "detail"}}.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image of an image_url part.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ToolCall is a tool call whose arguments are a JSON object.
type ToolCall struct {
	Name string `json:"name"`
	// Args is the arguments object, as JSON text in the model's key order.
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id"`
	Type string          `json:"type"` // "tool_call"
}

// InvalidToolCall is a tool call whose arguments are not a JSON object;
// Args keeps the text the model wrote.
type InvalidToolCall struct {
	Name  string `json:"name"`
	Args  string `json:"args"`
	ID    string `json:"id"`
	Error string `json:"error"`
	Type  string `json:"type"` // "invalid_tool_call"
}

// ToolCallChunk is a piece of a streamed tool call: chunks with the same
// Index belong to one call, their Args concatenated. Name and ID come
// with the first chunk of a call (nil on the rest).
type ToolCallChunk struct {
	Name  *string `json:"name"`
	Args  string  `json:"args"`
	ID    *string `json:"id"`
	Index *int    `json:"index"`
	Type  string  `json:"type"` // "tool_call_chunk"
}

// UsageMetadata is LangChain's token usage of an AI message.
type UsageMetadata struct {
	InputTokens        int64          `json:"input_tokens"`
	OutputTokens       int64          `json:"output_tokens"`
	TotalTokens        int64          `json:"total_tokens"`
	InputTokenDetails  map[string]any `json:"input_token_details,omitempty"`
	OutputTokenDetails map[string]any `json:"output_token_details,omitempty"`
}

// field is one key of the canonical JSON, in order.
type field struct {
	key string
	val any
}

// MarshalJSON writes the canonical LangChain JSON for m.Type.
func (m Message) MarshalJSON() ([]byte, error) {
	var name any
	if m.Name != "" {
		name = m.Name
	}
	fs := []field{
		{"content", m.Content},
		{"additional_kwargs", orEmpty(m.AdditionalKwargs)},
		{"response_metadata", orEmpty(m.ResponseMetadata)},
		{"type", m.Type},
		{"name", name},
		{"id", m.ID},
	}
	switch m.Type {
	case TypeHuman:
		fs = append(fs, field{"example", false})
	case TypeAI, TypeAIChunk:
		fs = append(fs,
			field{"example", false},
			field{"tool_calls", orEmptyList(m.ToolCalls)},
			field{"invalid_tool_calls", orEmptyList(m.InvalidToolCalls)},
			field{"usage_metadata", m.UsageMetadata})
		if m.Type == TypeAIChunk {
			fs = append(fs, field{"tool_call_chunks", orEmptyList(m.ToolCallChunks)})
		}
	case TypeTool:
		status := m.Status
		if status == "" {
			status = "success"
		}
		fs = append(fs, field{"tool_call_id", m.ToolCallID}, field{"artifact", nil}, field{"status", status})
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orEmptyList[E any](s []E) []E {
	if s == nil {
		return []E{}
	}
	return s
}

// FromLLM converts a Trellis message to LangChain's JSON form.
//
// Content is a string when the message has at most one text part, else a
// list of parts. Tool calls whose arguments are a JSON object (or empty,
// read as {}) become tool_calls; the rest become invalid_tool_calls with
// the text kept. Reasoning goes to additional_kwargs.reasoning_content,
// an error tool result to status "error", the tool name (a tool
// message) or the voice (an assistant message, llm.Message.Name) to name.
func FromLLM(m llm.Message) Message {
	out := Message{ID: m.ID, Content: contentOf(m.Parts)}
	switch m.Role {
	case llm.RoleUser:
		out.Type = TypeHuman
	case llm.RoleSystem:
		out.Type = TypeSystem
	case llm.RoleTool:
		out.Type = TypeTool
		out.ToolCallID = m.ToolCallID
		out.Name = m.ToolName
		out.Status = "success"
		if m.IsError {
			out.Status = "error"
		}
	default: // assistant, and any role a later version adds
		out.Type = TypeAI
		out.Name = m.Name
		out.ToolCalls, out.InvalidToolCalls = splitCalls(m.ToolCalls)
	}
	if m.Reasoning != "" || m.ReasoningSignature != "" {
		out.AdditionalKwargs = map[string]any{}
		if m.Reasoning != "" {
			out.AdditionalKwargs[KwargReasoning] = m.Reasoning
		}
		if m.ReasoningSignature != "" {
			out.AdditionalKwargs[KwargReasoningSignature] = m.ReasoningSignature
		}
	}
	return out
}

// FromLLMAll converts a list of messages (nil gives an empty list, so a
// state's messages key is [] rather than null).
func FromLLMAll(ms []llm.Message) []Message {
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = FromLLM(m)
	}
	return out
}

// Value returns v with Trellis messages in LangChain's form, for state
// values sent to clients: an llm.Message (or pointer to one) becomes a
// Message, a []llm.Message a []Message (never null); anything else is
// returned unchanged.
func Value(v any) any {
	switch x := v.(type) {
	case llm.Message:
		return FromLLM(x)
	case *llm.Message:
		if x == nil {
			return nil
		}
		return FromLLM(*x)
	case []llm.Message:
		return FromLLMAll(x)
	}
	return v
}

// Remove returns the removal of the message with this id, as LangGraph
// streams and accepts it; RemoveAll as id clears the list.
func Remove(id string) Message { return Message{Type: TypeRemove, ID: id} }

func contentOf(parts []llm.Part) Content {
	switch {
	case len(parts) == 0:
		return Content{}
	case len(parts) == 1 && parts[0].Type == llm.PartText:
		return Content{Text: parts[0].Text}
	}
	out := make([]Part, len(parts))
	for i, p := range parts {
		if p.Type == llm.PartImage {
			out[i] = Part{Type: "image_url", ImageURL: &ImageURL{URL: p.URL, Detail: p.Detail}}
			continue
		}
		out[i] = Part{Type: "text", Text: p.Text}
	}
	return Content{Parts: out}
}

// splitCalls sorts tool calls into LangChain's valid and invalid lists.
func splitCalls(calls []llm.ToolCall) ([]ToolCall, []InvalidToolCall) {
	var ok []ToolCall
	var bad []InvalidToolCall
	for _, c := range calls {
		if args, good := argsObject(c.Arguments); good {
			ok = append(ok, ToolCall{Name: c.Name, Args: args, ID: c.ID, Type: "tool_call"})
			continue
		}
		bad = append(bad, InvalidToolCall{
			Name: c.Name, Args: c.Arguments, ID: c.ID, Type: "invalid_tool_call",
			Error: "the arguments are not a JSON object",
		})
	}
	return ok, bad
}

// argsObject returns the compacted arguments object, or false when the
// text is not one. Empty text is the empty object (models send "" for a
// call without arguments).
func argsObject(s string) (json.RawMessage, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}"), true
	}
	if t[0] != '{' || !json.Valid([]byte(t)) {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(t)); err != nil {
		return nil, false
	}
	return b.Bytes(), true
}
