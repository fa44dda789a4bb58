package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trellis-agents/trellis/llm"
)

// response maps a complete reply; see the package doc.
func (m *Model) response(msg *sdk.Message) *llm.Response {
	out := llm.Message{ID: msg.ID, Role: llm.RoleAssistant}
	if out.ID == "" {
		out.ID = llm.NewID()
	}
	var text, reasoning, sig strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
			sig.WriteString(b.Signature)
		case "tool_use":
			id := b.ID
			if id == "" {
				id = llm.NewCallID()
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: id, Name: b.Name, Arguments: compactArgs(b.Input)})
		}
	}
	if t := text.String(); t != "" {
		out.Parts = []llm.Part{llm.Text(t)}
	}
	out.Reasoning, out.ReasoningSignature = reasoning.String(), sig.String()
	finish := finishReason(msg.StopReason)
	if len(out.ToolCalls) > 0 && finish == llm.FinishStop {
		finish = llm.FinishToolCalls // as llm.Assembler decides for streams
	}
	u := msg.Usage
	usage := usageOf(u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens, u.OutputTokensDetails.ThinkingTokens)
	return &llm.Response{Message: out, Usage: *usage, FinishReason: finish, Model: msg.Model}
}

// compactArgs returns a tool_use input as compact JSON text ({} if none).
func compactArgs(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil || b.Len() == 0 || b.String() == "null" {
		if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
			return s
		}
		return "{}"
	}
	return b.String()
}

// finishReason maps a stop reason; "" stays "" (not known yet).
func finishReason(r sdk.StopReason) llm.FinishReason {
	switch r {
	case "":
		return ""
	case sdk.StopReasonToolUse:
		return llm.FinishToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.FinishLength
	case sdk.StopReasonRefusal:
		return llm.FinishFiltered
	default: // end_turn, stop_sequence, pause_turn and reasons added later
		return llm.FinishStop
	}
}

func usageOf(input, cacheRead, cacheWrite, output, thinking int64) *llm.Usage {
	return &llm.Usage{
		InputTokens:       input + cacheRead + cacheWrite,
		CachedInputTokens: cacheRead,
		OutputTokens:      output,
		ReasoningTokens:   thinking,
		Requests:          1,
	}
}

// streamState follows one stream: the usage figures so far (the API sends
// whole-message totals, some only in message_start) and whether
// message_stop arrived.
type streamState struct {
	input, cacheRead, cacheWrite, output, thinking int64
	stopped                                        bool
}

func (st *streamState) usage() *llm.Usage {
	return usageOf(st.input, st.cacheRead, st.cacheWrite, st.output, st.thinking)
}

// event maps one server event to a chunk; ok is false for events that
// carry nothing a caller needs (content_block_stop, empty starts, ...).
func (st *streamState) event(ev sdk.MessageStreamEventUnion) (c llm.Chunk, ok bool) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		st.input, st.cacheRead, st.cacheWrite = u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
		st.output, st.thinking = u.OutputTokens, u.OutputTokensDetails.ThinkingTokens
		return llm.Chunk{Model: ev.Message.Model, Usage: st.usage()}, true
	case "content_block_start":
		b := ev.ContentBlock
		switch b.Type {
		case "text":
			c.Text = b.Text
		case "thinking":
			c.Reasoning, c.ReasoningSignature = b.Thinking, b.Signature
		case "tool_use":
			c.ToolCalls = []llm.ToolCallDelta{{Index: int(ev.Index), ID: b.ID, Name: b.Name}}
		}
	case "content_block_delta":
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			c.Text = d.Text
		case "thinking_delta":
			c.Reasoning = d.Thinking
		case "signature_delta":
			c.ReasoningSignature = d.Signature
		case "input_json_delta":
			if d.PartialJSON != "" {
				c.ToolCalls = []llm.ToolCallDelta{{Index: int(ev.Index), Arguments: d.PartialJSON}}
			}
		}
	case "message_delta":
		u := ev.Usage
		st.output = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			st.input = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			st.cacheRead = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			st.cacheWrite = u.CacheCreationInputTokens
		}
		if u.JSON.OutputTokensDetails.Valid() {
			st.thinking = u.OutputTokensDetails.ThinkingTokens
		}
		return llm.Chunk{FinishReason: finishReason(ev.Delta.StopReason), Usage: st.usage()}, true
	case "message_stop":
		st.stopped = true
	}
	ok = c.Text != "" || c.Reasoning != "" || c.ReasoningSignature != "" || len(c.ToolCalls) > 0
	return c, ok
}
