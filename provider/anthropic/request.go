package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/trellis-agents/trellis/llm"
)

const (
	// minThinkingBudget is the smallest budget_tokens the API accepts.
	minThinkingBudget = 1024
	// jsonInstruction is appended to the system prompt for a ResponseFormat
	// without a schema (structured outputs need one).
	jsonInstruction = "Answer with one JSON object and nothing else: no prose, no code fence."
	// invalidArgsKey holds, in a replayed tool_use input, arguments that
	// were not a JSON object.
	invalidArgsKey = "invalid_json"
)

// effortBudget turns Reasoning.Effort into a thinking budget when no
// BudgetTokens is given.
var effortBudget = map[string]int{"": minThinkingBudget, "low": minThinkingBudget, "medium": 4096, "high": 16384}

// params maps a request to the SDK's parameters; see the package doc. Its
// errors are plain (not APIErrors): retrying would not fix them.
func (m *Model) params(req *llm.Request) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req == nil {
		return p, errors.New("anthropic: nil request")
	}
	if len(req.Messages) == 0 {
		return p, errors.New("anthropic: the request has no messages: add at least one user message")
	}
	if req.MaxTokens < 0 {
		return p, fmt.Errorf("anthropic: MaxTokens %d is negative: use 0 for the default or a positive bound", req.MaxTokens)
	}
	p.Model = m.model
	p.MaxTokens = int64(req.MaxTokens)
	if p.MaxTokens == 0 {
		p.MaxTokens = int64(m.maxTokens)
	}
	system, msgs, err := mapMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	p.StopSequences = req.Stop
	if err := mapTools(&p, req); err != nil {
		return p, err
	}
	if err := mapReasoning(&p, req.Reasoning); err != nil {
		return p, err
	}
	if rf := req.ResponseFormat; rf != nil {
		if len(bytes.TrimSpace(rf.Schema)) == 0 {
			system = append(system, jsonInstruction)
		} else {
			schema, err := decodeObject(rf.Schema)
			if err != nil {
				return p, fmt.Errorf("anthropic: ResponseFormat.Schema: %w", err)
			}
			p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
		}
	}
	if len(system) > 0 {
		p.System = []sdk.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	return p, nil
}

// turn is one API message being built.
type turn struct {
	user   bool
	blocks []sdk.ContentBlockParamUnion
}

// mapMessages returns the system texts and the alternating API messages.
func mapMessages(in []llm.Message) ([]string, []sdk.MessageParam, error) {
	var system []string
	var turns []turn
	add := func(user bool, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for i, msg := range in {
		switch msg.Role {
		case llm.RoleSystem:
			for _, part := range msg.Parts {
				if part.Type != llm.PartText && part.Type != "" {
					return nil, nil, fmt.Errorf("anthropic: message %d (system) holds a %q part: system messages may hold only text", i, part.Type)
				}
			}
			if t := msg.Text(); t != "" {
				system = append(system, t)
			}
		case llm.RoleUser:
			blocks, err := contentBlocks(i, msg.Parts)
			if err != nil {
				return nil, nil, err
			}
			add(true, blocks)
		case llm.RoleAssistant:
			blocks, err := assistantBlocks(i, msg)
			if err != nil {
				return nil, nil, err
			}
			add(false, blocks)
		case llm.RoleTool:
			block, err := toolResult(i, msg)
			if err != nil {
				return nil, nil, err
			}
			add(true, []sdk.ContentBlockParamUnion{block})
		default:
			return nil, nil, fmt.Errorf("anthropic: message %d has role %q: want system, user, assistant or tool", i, msg.Role)
		}
	}
	if len(turns) == 0 {
		return nil, nil, errors.New("anthropic: the request has no user or assistant content (system messages alone are not enough): add a user message")
	}
	out := make([]sdk.MessageParam, len(turns))
	for i, t := range turns {
		if t.user {
			out[i] = sdk.NewUserMessage(toolResultsFirst(t.blocks)...)
		} else {
			out[i] = sdk.NewAssistantMessage(t.blocks...)
		}
	}
	return system, out, nil
}

// toolResultsFirst moves tool_result blocks ahead of the other blocks of a
// user message (keeping each group's order): the API wants the results of
// the previous turn's calls first.
func toolResultsFirst(blocks []sdk.ContentBlockParamUnion) []sdk.ContentBlockParamUnion {
	out := make([]sdk.ContentBlockParamUnion, 0, len(blocks))
	for _, b := range blocks {
		if b.OfToolResult != nil {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if b.OfToolResult == nil {
			out = append(out, b)
		}
	}
	return out
}

// contentBlocks maps user content parts; empty and blank text parts are
// dropped (the API rejects text blocks without non-whitespace text).
func contentBlocks(i int, parts []llm.Part) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for _, part := range parts {
		switch part.Type {
		case llm.PartText, "":
			if strings.TrimSpace(part.Text) != "" {
				out = append(out, sdk.NewTextBlock(part.Text))
			}
		case llm.PartImage:
			img, err := imageBlock(part.URL)
			if err != nil {
				return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
		default:
			return nil, fmt.Errorf("anthropic: message %d holds a part of type %q: want %q or %q", i, part.Type, llm.PartText, llm.PartImage)
		}
	}
	return out, nil
}

var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// imageBlock maps an image URL: http(s) → URL source, data: → base64 source.
func imageBlock(raw string) (*sdk.ImageBlockParam, error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
		mediaType, _, _ = strings.Cut(mediaType, ";") // drop parameters such as charset
		mediaType = strings.ToLower(strings.TrimSpace(mediaType))
		switch {
		case !ok || !isBase64:
			return nil, errors.New("image data URL is not of the form data:<media type>;base64,<data>")
		case !imageTypes[mediaType]:
			return nil, fmt.Errorf("image data URL has media type %q: Anthropic accepts image/jpeg, image/png, image/gif and image/webp", mediaType)
		case data == "":
			return nil, errors.New("image data URL holds no data")
		}
		src := sdk.Base64ImageSourceParam{MediaType: sdk.Base64ImageSourceMediaType(mediaType), Data: data}
		return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &src}}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("image URL %q is neither an http(s) URL nor a base64 data: URL", truncate(raw, 64))
	}
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: raw}}}, nil
}

// assistantBlocks maps an assistant message: signed thinking, text, calls.
func assistantBlocks(i int, msg llm.Message) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	if msg.Reasoning != "" && msg.ReasoningSignature != "" {
		out = append(out, sdk.NewThinkingBlock(msg.ReasoningSignature, msg.Reasoning))
	}
	for _, part := range msg.Parts {
		if part.Type != llm.PartText && part.Type != "" {
			return nil, fmt.Errorf("anthropic: message %d (assistant) holds a %q part: assistant messages may hold only text", i, part.Type)
		}
		// A model may answer with blank text; the API refuses it back.
		if strings.TrimSpace(part.Text) != "" {
			out = append(out, sdk.NewTextBlock(part.Text))
		}
	}
	for _, call := range msg.ToolCalls {
		if call.ID == "" || call.Name == "" {
			return nil, fmt.Errorf("anthropic: message %d (assistant) has a tool call without an ID or a name (id %q, name %q): every call needs both", i, call.ID, call.Name)
		}
		out = append(out, sdk.NewToolUseBlock(call.ID, toolInput(call.Arguments), call.Name))
	}
	return out, nil
}

// toolInput returns a call's arguments as the tool_use input: the object as
// written, {} when empty, or {"invalid_json": text} when not an object.
func toolInput(args string) json.RawMessage {
	trimmed := bytes.TrimSpace([]byte(args))
	if len(trimmed) == 0 {
		return json.RawMessage("{}")
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	b, _ := json.Marshal(map[string]string{invalidArgsKey: args}) // a map of strings always marshals
	return b
}

// toolResult maps a tool message to a tool_result block.
func toolResult(i int, msg llm.Message) (sdk.ContentBlockParamUnion, error) {
	if msg.ToolCallID == "" {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("anthropic: message %d (tool) has no ToolCallID: it must name the call it answers", i)
	}
	res := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
	if msg.IsError {
		res.IsError = sdk.Bool(true)
	}
	for _, part := range msg.Parts {
		switch part.Type {
		case llm.PartText, "":
			if strings.TrimSpace(part.Text) != "" {
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: part.Text}})
			}
		case llm.PartImage:
			img, err := imageBlock(part.URL)
			if err != nil {
				return sdk.ContentBlockParamUnion{}, fmt.Errorf("anthropic: message %d (tool): %w", i, err)
			}
			res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
		default:
			return sdk.ContentBlockParamUnion{}, fmt.Errorf("anthropic: message %d (tool) holds a part of type %q: want %q or %q", i, part.Type, llm.PartText, llm.PartImage)
		}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &res}, nil
}

// mapTools sets tools and tool_choice.
func mapTools(p *sdk.MessageNewParams, req *llm.Request) error {
	for i, spec := range req.Tools {
		if spec.Name == "" {
			return fmt.Errorf("anthropic: tool %d has no name", i)
		}
		schema, err := inputSchema(spec.Parameters)
		if err != nil {
			return fmt.Errorf("anthropic: tool %q: %w", spec.Name, err)
		}
		t := sdk.ToolParam{Name: spec.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](schema)}
		if spec.Description != "" {
			t.Description = sdk.String(spec.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &t})
	}
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	var disable param.Opt[bool]
	if noParallel {
		disable = sdk.Bool(true)
	}
	switch tc := req.ToolChoice; tc.Mode {
	case "":
		if noParallel {
			p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}
		}
	case llm.ToolChoiceAuto:
		p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{DisableParallelToolUse: disable}
	case llm.ToolChoiceRequired:
		p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{DisableParallelToolUse: disable}
	case llm.ToolChoiceTool:
		if tc.Name == "" {
			return errors.New("anthropic: ToolChoice mode \"tool\" needs the tool's Name")
		}
		p.ToolChoice.OfTool = &sdk.ToolChoiceToolParam{Name: tc.Name, DisableParallelToolUse: disable}
	case llm.ToolChoiceNone:
		p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
	default:
		return fmt.Errorf("anthropic: unknown ToolChoice mode %q: want auto, required, tool or none", tc.Mode)
	}
	return nil
}

// inputSchema checks a tool's parameter schema and returns it as sent:
// {"type":"object"} for none, the schema as given otherwise, with
// "type":"object" added when it has no type.
func inputSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errors.New("the parameter schema is not a JSON object")
	}
	typ, ok := fields["type"]
	if !ok {
		fields["type"] = json.RawMessage(`"object"`)
		b, err := json.Marshal(fields)
		if err != nil {
			return nil, fmt.Errorf("the parameter schema: %w", err)
		}
		return b, nil
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, fmt.Errorf("the parameter schema has type %s: Anthropic takes only object schemas (wrap the value in an object property)", typ)
	}
	return raw, nil
}

// mapReasoning sets the thinking configuration and makes room for it in
// max_tokens.
func mapReasoning(p *sdk.MessageNewParams, r *llm.Reasoning) error {
	switch {
	case r == nil:
		return nil
	case !r.Enabled:
		p.Thinking.OfDisabled = &sdk.ThinkingConfigDisabledParam{}
		return nil
	case r.BudgetTokens < 0:
		return fmt.Errorf("anthropic: Reasoning.BudgetTokens %d is negative", r.BudgetTokens)
	}
	budget := r.BudgetTokens
	if budget == 0 {
		b, ok := effortBudget[strings.ToLower(r.Effort)]
		if !ok {
			return fmt.Errorf("anthropic: Reasoning.Effort %q: want low, medium or high, or set BudgetTokens", r.Effort)
		}
		budget = b
	}
	budget = max(budget, minThinkingBudget)
	if p.MaxTokens <= int64(budget) {
		p.MaxTokens += int64(budget)
	}
	p.Thinking.OfEnabled = &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}
	return nil
}

// decodeObject decodes a JSON object keeping numbers exact.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	return obj, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
