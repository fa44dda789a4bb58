// Package lcwire reads the messages a LangGraph-API server sends in state
// values — LangChain's message JSON ({"type": "human"|"ai"|"tool"|"system",
// "content", "id", "tool_calls", ...}) — into llm.Message, for eval's
// server target. It only reads, and only what evaluators look at: it is
// not the server's converter (eval does not import the server).
package lcwire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

type message struct {
	Type       string          `json:"type"`
	Role       string          `json:"role"`
	ID         string          `json:"id"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Status     string          `json:"status"`
	Kwargs     struct {
		Reasoning string `json:"reasoning_content"`
	} `json:"additional_kwargs"`
}

type toolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Messages reads a list of LangChain messages.
func Messages(raw json.RawMessage) ([]llm.Message, error) {
	var in []message
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	out := make([]llm.Message, 0, len(in))
	for i, m := range in {
		msg, err := m.toLLM()
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		out = append(out, msg)
	}
	return out, nil
}

func (m message) toLLM() (llm.Message, error) {
	out := llm.Message{ID: m.ID, Reasoning: m.Kwargs.Reasoning}
	typ := m.Type
	if typ == "" {
		typ = m.Role
	}
	switch typ {
	case "human", "user":
		out.Role = llm.RoleUser
	case "ai", "assistant", "AIMessageChunk":
		out.Role = llm.RoleAssistant
	case "tool":
		out.Role = llm.RoleTool
		out.ToolCallID, out.ToolName, out.IsError = m.ToolCallID, m.Name, m.Status == "error"
	case "system":
		out.Role = llm.RoleSystem
	default:
		return out, fmt.Errorf("unknown message type %q", typ)
	}
	text, err := content(m.Content)
	if err != nil {
		return out, err
	}
	if text != "" {
		out.Parts = []llm.Part{llm.Text(text)}
	}
	for _, c := range m.ToolCalls {
		args := strings.TrimSpace(string(c.Args))
		if args == "" || args == "null" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return out, nil
}

// content reads a string, or the text of a list of parts.
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		var str string
		if json.Unmarshal(p, &str) == nil {
			b.WriteString(str)
			continue
		}
		var pt part
		if json.Unmarshal(p, &pt) == nil && pt.Type == "text" {
			b.WriteString(pt.Text)
		}
	}
	return b.String(), nil
}
