package llm

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Role says who wrote a message.
type Role string

// The four roles every provider understands.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation. Every message has an ID, which the
// graph's merge-by-ID reducer keys on (see MessagesKey); the constructors
// assign a fresh one.
//
// Which fields are used depends on the role: system and user messages carry
// Parts; assistant messages carry Parts (the answer text), Reasoning and
// ToolCalls; tool messages carry the result in Parts and name the call they
// answer with ToolCallID.
type Message struct {
	ID    string `json:"id"`
	Role  Role   `json:"role"`
	Parts []Part `json:"parts,omitempty"`
	// Reasoning is the model's reasoning ("thinking") text, kept apart
	// from the answer.
	Reasoning string `json:"reasoning,omitempty"`
	// ReasoningSignature is an opaque token some providers (Anthropic)
	// attach to reasoning and require back, unchanged, when the reasoning
	// is replayed in a tool-use loop.
	ReasoningSignature string     `json:"reasoning_signature,omitempty"`
	ToolCalls          []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is the name of the tool that produced a tool message.
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool message that reports a failure (bad arguments,
	// a tool error, a rejected or cancelled call).
	IsError bool `json:"is_error,omitempty"`
	// Name names the voice of an assistant message written by one of an
	// agent's internal participants (a reviewer checking a draft): empty
	// for the agent's own replies. Readers of a thread's history show a
	// named message as the agent's working, not as its answer.
	Name string `json:"name,omitempty"`
}

// PartType says what a content part holds.
type PartType string

// Content part types.
const (
	PartText  PartType = "text"
	PartImage PartType = "image_url"
)

// Part is a piece of message content: text, or an image given by URL
// (https or a data: URL) for providers that accept images.
type Part struct {
	Type PartType `json:"type"`
	Text string   `json:"text,omitempty"`
	URL  string   `json:"url,omitempty"`
	// Detail is an optional image detail hint ("low", "high", "auto").
	Detail string `json:"detail,omitempty"`
}

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// ImageURL returns an image part.
func ImageURL(url string) Part { return Part{Type: PartImage, URL: url} }

// ToolCall is a call the model asks for. Arguments is the JSON text the model
// wrote, kept as a string because it may not be valid JSON: the tool node
// validates it and asks the model to fix a bad call.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// NewID returns a fresh message ID ("msg_" and 24 hex digits).
func NewID() string { return newID("msg_") }

// NewCallID returns a fresh tool-call ID, for calls a provider sent
// without one.
func NewCallID() string { return newID("call_") }

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return prefix + hex.EncodeToString(b[:])
}

// System returns a system message.
func System(text string) Message {
	return Message{ID: NewID(), Role: RoleSystem, Parts: []Part{Text(text)}}
}

// User returns a user message holding text.
func User(text string) Message {
	return Message{ID: NewID(), Role: RoleUser, Parts: []Part{Text(text)}}
}

// UserParts returns a user message holding parts (text and images).
func UserParts(parts ...Part) Message {
	return Message{ID: NewID(), Role: RoleUser, Parts: parts}
}

// Assistant returns an assistant message holding text and, optionally,
// tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	m := Message{ID: NewID(), Role: RoleAssistant, ToolCalls: calls}
	if text != "" {
		m.Parts = []Part{Text(text)}
	}
	return m
}

// ToolResult returns the tool message answering call.
func ToolResult(call ToolCall, content string) Message {
	return Message{ID: NewID(), Role: RoleTool, ToolCallID: call.ID, ToolName: call.Name, Parts: []Part{Text(content)}}
}

// ToolError returns a tool message reporting that call failed; the model
// sees content and the error mark.
func ToolError(call ToolCall, content string) Message {
	m := ToolResult(call, content)
	m.IsError = true
	return m
}

// Text returns the message's text parts joined together.
func (m Message) Text() string {
	switch len(m.Parts) {
	case 0:
		return ""
	case 1:
		return m.Parts[0].Text
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Clone returns a copy of m that shares no slices with it.
func (m Message) Clone() Message {
	m.Parts = append([]Part(nil), m.Parts...)
	m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
	return m
}
