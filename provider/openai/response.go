package openai

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/trellis-agents/trellis/llm"
)

var errNoChoices = errors.New("the response holds no choices")

// response maps a complete reply. Only the first choice is read (the
// package never asks for more than one).
func (m *Model) response(cc *openai.ChatCompletion) (*llm.Response, error) {
	var ch *openai.ChatCompletionChoice
	for i := range cc.Choices {
		if cc.Choices[i].Index == 0 {
			ch = &cc.Choices[i]
			break
		}
	}
	if ch == nil && len(cc.Choices) > 0 {
		ch = &cc.Choices[0]
	}
	if ch == nil {
		return nil, &llm.APIError{Provider: m.provider, Model: m.model, Message: errNoChoices.Error(), Err: errNoChoices}
	}
	msg := llm.Message{ID: llm.NewID(), Role: llm.RoleAssistant}
	text := ch.Message.Content
	if text == "" {
		// A refusal is the model's answer; keep it where callers look.
		text = ch.Message.Refusal
	}
	if text != "" {
		msg.Parts = []llm.Part{llm.Text(text)}
	}
	msg.Reasoning = reasoningOf(ch.Message.JSON.ExtraFields)
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered by this package
		}
		id := tc.ID
		if id == "" {
			id = llm.NewCallID()
		}
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	finish := finishReason(ch.FinishReason)
	if len(msg.ToolCalls) > 0 && finish == llm.FinishStop {
		// Some servers (Ollama among them) say "stop" after tool calls;
		// the llm.Assembler decides the same way for streams.
		finish = llm.FinishToolCalls
	}
	return &llm.Response{
		Message:      msg,
		Usage:        usageOf(&cc.Usage),
		FinishReason: finish,
		Model:        cc.Model,
	}, nil
}

// chunkOf maps one streamed event; done reports a finish reason for the
// first choice.
func chunkOf(ev *openai.ChatCompletionChunk) (c llm.Chunk, done bool) {
	c.Model = ev.Model
	for i := range ev.Choices {
		ch := &ev.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		c.Text += d.Content + d.Refusal
		c.Reasoning += reasoningOf(d.JSON.ExtraFields)
		for _, tc := range d.ToolCalls {
			c.ToolCalls = append(c.ToolCalls, llm.ToolCallDelta{
				Index:     int(tc.Index),
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: tc.Function.Arguments,
			})
		}
		if ch.FinishReason != "" {
			c.FinishReason = finishReason(ch.FinishReason)
			done = true
		}
	}
	if ev.JSON.Usage.Valid() {
		u := usageOf(&ev.Usage)
		c.Usage = &u
	}
	return c, done
}

// reasoningKeys are the fields compatible servers put reasoning text in:
// reasoning_content (DeepSeek, Qwen, older vLLM), reasoning (newer vLLM,
// Ollama, OpenRouter).
var reasoningKeys = [...]string{"reasoning_content", "reasoning"}

// reasoningOf reads the reasoning text from the fields the SDK does not
// know. Non-string values (objects some gateways send) are ignored.
func reasoningOf(extra map[string]respjson.Field) string {
	for _, k := range reasoningKeys {
		raw := extra[k].Raw()
		if !strings.HasPrefix(raw, `"`) {
			continue
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// usageOf maps token usage; Requests is always 1 (one HTTP request).
func usageOf(u *openai.CompletionUsage) llm.Usage {
	out := llm.Usage{
		InputTokens:       u.PromptTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
		Requests:          1,
	}
	if out.CachedInputTokens == 0 {
		// DeepSeek reports cache hits in a field of its own.
		var hit int64
		if raw := u.JSON.ExtraFields["prompt_cache_hit_tokens"].Raw(); raw != "" && json.Unmarshal([]byte(raw), &hit) == nil {
			out.CachedInputTokens = hit
		}
	}
	return out
}

// finishReason normalises a finish reason. Reasons outside the API's list
// ("eos", "end_turn", a server's own) count as a natural stop.
func finishReason(r string) llm.FinishReason {
	switch r {
	case "length", "max_tokens":
		return llm.FinishLength
	case "tool_calls", "function_call":
		return llm.FinishToolCalls
	case "content_filter":
		return llm.FinishFiltered
	default:
		return llm.FinishStop
	}
}
