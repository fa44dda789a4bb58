package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trellis-agents/trellis/llm"
)

// params maps an llm.Request to the SDK's request parameters. It only reads
// req. Every problem it finds is one the server would reject too, reported
// here with what to change.
func (m *Model) params(req *llm.Request) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	if req == nil {
		return p, errors.New("openai: the request is nil")
	}
	if len(req.Messages) == 0 {
		return p, errors.New("openai: the request has no messages; add at least one user message")
	}
	p.Model = m.model
	p.Messages = make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for i := range req.Messages {
		msg, err := messageParam(&req.Messages[i])
		if err != nil {
			return p, fmt.Errorf("openai: message %d (%s): %w", i, req.Messages[i].Role, err)
		}
		p.Messages = append(p.Messages, msg)
	}

	if err := toolParams(&p, req); err != nil {
		return p, err
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = param.NewOpt(*req.TopP)
	}
	switch {
	case req.MaxTokens < 0:
		return p, fmt.Errorf("openai: MaxTokens is %d; use 0 for the server's default or a positive limit", req.MaxTokens)
	case req.MaxTokens > 0 && m.useMaxTokens:
		p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	case req.MaxTokens > 0:
		p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if len(req.Stop) > 0 {
		p.Stop.OfStringArray = append([]string(nil), req.Stop...)
	}
	if rf := req.ResponseFormat; rf != nil {
		if err := responseFormat(&p, rf); err != nil {
			return p, err
		}
	}
	if r := req.Reasoning; r != nil && r.Enabled {
		if e := effort(r); e != "" {
			p.ReasoningEffort = shared.ReasoningEffort(e)
		}
	}
	return p, nil
}

// effort is the reasoning_effort for r: its Effort, else one derived from
// the budget (≤2048 tokens low, ≤8192 medium, more high), else none (the
// server's default).
func effort(r *llm.Reasoning) string {
	if e := strings.ToLower(strings.TrimSpace(r.Effort)); e != "" {
		return e
	}
	switch b := r.BudgetTokens; {
	case b <= 0:
		return ""
	case b <= 2048:
		return "low"
	case b <= 8192:
		return "medium"
	default:
		return "high"
	}
}

func messageParam(m *llm.Message) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	switch m.Role {
	case llm.RoleSystem:
		text, err := textOnly(m.Parts, "a system message")
		if err != nil {
			return u, err
		}
		u.OfSystem = &openai.ChatCompletionSystemMessageParam{}
		u.OfSystem.Content.OfString = param.NewOpt(text)
	case llm.RoleUser:
		content, err := userContent(m.Parts)
		if err != nil {
			return u, err
		}
		u.OfUser = &openai.ChatCompletionUserMessageParam{Content: content}
	case llm.RoleAssistant:
		a, err := assistantParam(m)
		if err != nil {
			return u, err
		}
		u.OfAssistant = a
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return u, errors.New("a tool message needs the ToolCallID of the call it answers (build it with llm.ToolResult)")
		}
		text, err := textOnly(m.Parts, "a tool result")
		if err != nil {
			return u, err
		}
		u.OfTool = &openai.ChatCompletionToolMessageParam{ToolCallID: m.ToolCallID}
		u.OfTool.Content.OfString = param.NewOpt(text)
	default:
		return u, fmt.Errorf("unknown role %q; use system, user, assistant or tool", m.Role)
	}
	return u, nil
}

// textOnly joins the text parts, rejecting anything else.
func textOnly(parts []llm.Part, what string) (string, error) {
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			b.WriteString(p.Text)
		case llm.PartImage:
			return "", fmt.Errorf("the Chat Completions API accepts no image in %s; move the image to a user message", what)
		default:
			return "", fmt.Errorf("unknown part type %q", p.Type)
		}
	}
	return b.String(), nil
}

// userContent is a plain string for text-only messages (which every
// compatible server accepts) and an array of parts when images are present.
func userContent(parts []llm.Part) (openai.ChatCompletionUserMessageParamContentUnion, error) {
	var c openai.ChatCompletionUserMessageParamContentUnion
	hasImage := false
	for _, p := range parts {
		if p.Type == llm.PartImage {
			hasImage = true
		}
	}
	if !hasImage {
		text, err := textOnly(parts, "a user message")
		c.OfString = param.NewOpt(text)
		return c, err
	}
	for i, p := range parts {
		switch p.Type {
		case llm.PartText:
			c.OfArrayOfContentParts = append(c.OfArrayOfContentParts, openai.TextContentPart(p.Text))
		case llm.PartImage:
			if strings.TrimSpace(p.URL) == "" {
				return c, fmt.Errorf("image part %d has no URL; give an https or data: URL", i)
			}
			img := openai.ChatCompletionContentPartImageImageURLParam{URL: p.URL, Detail: p.Detail}
			c.OfArrayOfContentParts = append(c.OfArrayOfContentParts, openai.ImageContentPart(img))
		default:
			return c, fmt.Errorf("unknown part type %q", p.Type)
		}
	}
	return c, nil
}

// assistantParam sends the answer text and the tool calls; reasoning stays
// behind (the official API rejects it and DeepSeek asks not to send it).
func assistantParam(m *llm.Message) (*openai.ChatCompletionAssistantMessageParam, error) {
	text, err := textOnly(m.Parts, "an assistant message")
	if err != nil {
		return nil, err
	}
	a := &openai.ChatCompletionAssistantMessageParam{}
	if text != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(text)
	}
	for i, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Name == "" {
			return nil, fmt.Errorf("tool call %d has no ID or no name; the server needs both to pair it with its result", i)
		}
		args := tc.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
			},
		})
	}
	return a, nil
}

// emptySchema is sent for a tool without parameters: some compatible
// servers require a schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func toolParams(p *openai.ChatCompletionNewParams, req *llm.Request) error {
	names := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return fmt.Errorf("openai: tool %d has no name", i)
		}
		names[t.Name] = true
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 || bytes.Equal(bytes.TrimSpace(schema), []byte("null")) {
			schema = emptySchema
		}
		params, err := schemaObject(schema)
		if err != nil {
			return fmt.Errorf("openai: tool %q: Parameters %w", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}

	tc := req.ToolChoice
	switch tc.Mode {
	case "":
	case llm.ToolChoiceAuto, llm.ToolChoiceNone, llm.ToolChoiceRequired:
		if len(req.Tools) > 0 {
			p.ToolChoice.OfAuto = param.NewOpt(string(tc.Mode))
		} else if tc.Mode == llm.ToolChoiceRequired {
			return errors.New("openai: ToolChoice is required but the request has no tools")
		}
	case llm.ToolChoiceTool:
		if tc.Name == "" {
			return errors.New("openai: ToolChoice names no tool; set ToolChoice.Name")
		}
		if !names[tc.Name] {
			return fmt.Errorf("openai: ToolChoice names %q, which is not among the request's tools", tc.Name)
		}
		p.ToolChoice.OfFunctionToolChoice = &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: tc.Name},
		}
	default:
		return fmt.Errorf("openai: unknown ToolChoice mode %q; use auto, none, required or tool", tc.Mode)
	}
	if req.ParallelToolCalls != nil && len(req.Tools) > 0 {
		p.ParallelToolCalls = param.NewOpt(*req.ParallelToolCalls)
	}
	return nil
}

// schemaObject decodes a JSON schema object keeping every value as raw
// JSON, so that numbers and nested objects reach the server as written.
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("must be a JSON object schema such as {\"type\":\"object\"}: got %.80s", raw)
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out, nil
}

func responseFormat(p *openai.ChatCompletionNewParams, rf *llm.ResponseFormat) error {
	if len(bytes.TrimSpace(rf.Schema)) == 0 {
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		return nil
	}
	if _, err := schemaObject(rf.Schema); err != nil {
		return fmt.Errorf("openai: ResponseFormat.Schema %w", err)
	}
	name := rf.Name
	if name == "" {
		name = "response"
	}
	js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: rf.Schema}
	if rf.Strict {
		js.Strict = param.NewOpt(true)
	}
	p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	return nil
}
