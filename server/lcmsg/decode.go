package lcmsg

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// FieldError is bad message input, with the path of the field at fault
// ("[2].tool_calls[0].args") relative to what was decoded. A handler
// prefixes its own path ("input.messages") and answers 400 (or 422).
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "lcmsg: " + e.Msg
	}
	return "lcmsg: " + e.Path + ": " + e.Msg
}

func fieldErr(path, format string, args ...any) error {
	return &FieldError{Path: strings.TrimPrefix(path, "."), Msg: fmt.Sprintf(format, args...)}
}

// Input is a messages value a client sent, resolved against LangGraph's
// add_messages rules.
type Input struct {
	// Messages to add, or to replace those with the same ID.
	Messages []llm.Message
	// Remove lists the IDs of messages to remove ({"type": "remove"}).
	Remove []string
	// ReplaceAll is set when the input held a removal of RemoveAll:
	// the current list is cleared and Messages (only those after the
	// marker) become the whole list.
	ReplaceAll bool
}

// DecodeInput reads a messages value as LangGraph accepts it: a list, or
// a single item, where each item is a message object in LangChain's
// "type" form or the "role" form, a plain string (a user message), or a
// [role, content] pair. Messages without an id get a fresh one. Errors
// are *FieldError naming the bad item and field.
func DecodeInput(data []byte) (Input, error) {
	var in Input
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return in, fieldErr("", "no messages: want a list of messages")
	}
	var items []json.RawMessage
	if data[0] == '[' && !isPair(data) {
		if err := json.Unmarshal(data, &items); err != nil {
			return in, fieldErr("", "not a list of messages: %v", err)
		}
	} else {
		items = []json.RawMessage{data}
	}
	for i, raw := range items {
		path := "[" + strconv.Itoa(i) + "]"
		obj, err := itemObject(raw, path)
		if err != nil {
			return Input{}, err
		}
		typ, err := typeOf(obj, path)
		if err != nil {
			return Input{}, err
		}
		if typ == TypeRemove {
			id, err := str(obj, "id", path)
			if err != nil {
				return Input{}, err
			}
			if id == "" {
				return Input{}, fieldErr(path+".id", "a removal needs the id of the message to remove")
			}
			if id == RemoveAll {
				in = Input{ReplaceAll: true}
				continue
			}
			in.Remove = append(in.Remove, id)
			continue
		}
		m, err := decodeObject(obj, typ, path)
		if err != nil {
			return Input{}, err
		}
		in.Messages = append(in.Messages, m)
	}
	return in, nil
}

// ToLLM reads one message in LangChain's "type" form or the "role" form.
// A message without an id gets a fresh one, a tool call without an id a
// fresh call id. Fields Trellis messages do not hold (response_metadata,
// usage_metadata, a human's name, additional_kwargs other than reasoning)
// are dropped. Errors are *FieldError naming the field.
func ToLLM(data []byte) (llm.Message, error) {
	obj, err := itemObject(data, "")
	if err != nil {
		return llm.Message{}, err
	}
	typ, err := typeOf(obj, "")
	if err != nil {
		return llm.Message{}, err
	}
	if typ == TypeRemove {
		return llm.Message{}, fieldErr("type", "a removal is not a message; read a messages list with DecodeInput")
	}
	return decodeObject(obj, typ, "")
}

// isPair reports whether data is a two-element [role, content] array of
// strings, LangChain's tuple shorthand.
func isPair(data []byte) bool {
	var pair []json.RawMessage
	if json.Unmarshal(data, &pair) != nil || len(pair) != 2 {
		return false
	}
	var role string
	return json.Unmarshal(pair[0], &role) == nil && roleTypes[role] != ""
}

// itemObject returns the message object of one item, turning the string
// and pair shorthands into objects.
func itemObject(raw json.RawMessage, path string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, fieldErr(path, "empty message")
	case raw[0] == '"':
		return map[string]json.RawMessage{"type": json.RawMessage(`"human"`), "content": raw}, nil
	case raw[0] == '[':
		var pair []json.RawMessage
		var role string
		if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &role) != nil {
			return nil, fieldErr(path, "a message given as a list must be a [role, content] pair")
		}
		return map[string]json.RawMessage{"role": pair[0], "content": pair[1]}, nil
	case raw[0] != '{':
		return nil, fieldErr(path, "want a message object, a string or a [role, content] pair, got %s", kind(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fieldErr(path, "not a JSON object: %v", err)
	}
	return obj, nil
}

// typeTypes and roleTypes map the "type" and "role" values Trellis
// accepts to LangChain's types.
var (
	typeTypes = map[string]string{
		"human": TypeHuman, "user": TypeHuman,
		"ai": TypeAI, "assistant": TypeAI,
		"system": TypeSystem, "developer": TypeSystem,
		"tool":   TypeTool,
		"remove": TypeRemove,
	}
	roleTypes = map[string]string{
		"user": TypeHuman, "human": TypeHuman,
		"assistant": TypeAI, "ai": TypeAI,
		"system": TypeSystem, "developer": TypeSystem,
		"tool": TypeTool,
	}
)

func typeOf(obj map[string]json.RawMessage, path string) (string, error) {
	t, err := str(obj, "type", path)
	if err != nil {
		return "", err
	}
	r, err := str(obj, "role", path)
	if err != nil {
		return "", err
	}
	var fromType, fromRole string
	if t != "" {
		name := t
		if base, ok := strings.CutSuffix(t, "MessageChunk"); ok && base != "" {
			name = strings.ToLower(base)
		}
		if fromType = typeTypes[name]; fromType == "" {
			return "", fieldErr(path+".type", "unknown message type %q: want human, ai, system, tool or remove (or user, assistant)", t)
		}
	}
	if r != "" {
		if fromRole = roleTypes[r]; fromRole == "" {
			return "", fieldErr(path+".role", "unknown role %q: want user, assistant, system or tool", r)
		}
	}
	switch {
	case fromType != "" && fromRole != "" && fromType != fromRole:
		return "", fieldErr(path, "type %q and role %q disagree; give one of them", t, r)
	case fromType != "":
		return fromType, nil
	case fromRole != "":
		return fromRole, nil
	}
	return "", fieldErr(path, "a message needs a \"type\" (human, ai, system, tool) or a \"role\" (user, assistant, system, tool)")
}

func decodeObject(obj map[string]json.RawMessage, typ, path string) (llm.Message, error) {
	var m llm.Message
	var err error
	if m.ID, err = str(obj, "id", path); err != nil {
		return m, err
	}
	if m.ID == "" {
		m.ID = llm.NewID()
	}
	switch typ {
	case TypeHuman:
		m.Role = llm.RoleUser
	case TypeSystem:
		m.Role = llm.RoleSystem
	case TypeAI:
		m.Role = llm.RoleAssistant
	case TypeTool:
		m.Role = llm.RoleTool
	}
	var blockCalls []llm.ToolCall
	if m.Parts, blockCalls, err = decodeContent(obj["content"], path+".content", &m); err != nil {
		return m, err
	}
	if err := decodeKwargs(obj["additional_kwargs"], path+".additional_kwargs", &m); err != nil {
		return m, err
	}
	hasCalls := present(obj["tool_calls"]) || present(obj["invalid_tool_calls"])
	if typ != TypeAI {
		if hasCalls {
			return m, fieldErr(path+".tool_calls", "only ai (assistant) messages carry tool calls")
		}
		if len(blockCalls) > 0 {
			return m, fieldErr(path+".content", "only ai (assistant) messages carry tool_use parts")
		}
	}
	switch typ {
	case TypeAI:
		if m.Name, err = str(obj, "name", path); err != nil {
			return m, err
		}
		if m.ToolCalls, err = decodeCalls(obj["tool_calls"], path+".tool_calls"); err != nil {
			return m, err
		}
		invalid, err := decodeInvalidCalls(obj["invalid_tool_calls"], path+".invalid_tool_calls")
		if err != nil {
			return m, err
		}
		m.ToolCalls = append(m.ToolCalls, invalid...)
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = blockCalls
		}
		if len(m.ToolCalls) == 0 && !hasCalls {
			// The older OpenAI place: additional_kwargs.tool_calls.
			var kw map[string]json.RawMessage
			if json.Unmarshal(obj["additional_kwargs"], &kw) == nil && present(kw["tool_calls"]) {
				if m.ToolCalls, err = decodeCalls(kw["tool_calls"], path+".additional_kwargs.tool_calls"); err != nil {
					return m, err
				}
			}
		}
	case TypeTool:
		if m.ToolCallID, err = str(obj, "tool_call_id", path); err != nil {
			return m, err
		}
		if m.ToolCallID == "" {
			return m, fieldErr(path+".tool_call_id", "a tool message must name the tool call it answers")
		}
		if m.ToolName, err = str(obj, "name", path); err != nil {
			return m, err
		}
		status, err := str(obj, "status", path)
		if err != nil {
			return m, err
		}
		switch status {
		case "", "success":
		case "error":
			m.IsError = true
		default:
			return m, fieldErr(path+".status", "unknown status %q: want success or error", status)
		}
	}
	return m, nil
}

// decodeContent reads content: a string, null, or a list of parts.
// Reasoning parts go to m; tool_use/tool_call parts are returned.
func decodeContent(raw json.RawMessage, path string, m *llm.Message) ([]llm.Part, []llm.ToolCall, error) {
	if !present(raw) {
		return nil, nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil, nil
		}
		return []llm.Part{llm.Text(s)}, nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, fieldErr(path, "want a string or a list of parts, got %s", kind(raw))
	}
	var parts []llm.Part
	var calls []llm.ToolCall
	for i, item := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		if json.Unmarshal(item, &s) == nil {
			parts = append(parts, llm.Text(s))
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil {
			return nil, nil, fieldErr(p, "want a part object or a string, got %s", kind(item))
		}
		typ, err := str(obj, "type", p)
		if err != nil {
			return nil, nil, err
		}
		switch typ {
		case "text":
			t, err := str(obj, "text", p)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, llm.Text(t))
		case "image_url":
			part, err := imageURLPart(obj["image_url"], p+".image_url")
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, part)
		case "image":
			part, err := imagePart(obj, p)
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, part)
		case "reasoning", "thinking":
			t, err := str(obj, typ, p)
			if err != nil {
				return nil, nil, err
			}
			m.Reasoning += t
			if sig, err := str(obj, "signature", p); err != nil {
				return nil, nil, err
			} else if sig != "" {
				m.ReasoningSignature = sig
			}
		case "tool_use", "tool_call":
			c, err := blockCall(obj, p)
			if err != nil {
				return nil, nil, err
			}
			calls = append(calls, c)
		case "":
			return nil, nil, fieldErr(p+".type", "a content part needs a type (text, image_url, image)")
		default:
			return nil, nil, fieldErr(p+".type", "unsupported part type %q: Trellis messages hold text and images (text, image_url, image)", typ)
		}
	}
	return parts, calls, nil
}

func imageURLPart(raw json.RawMessage, path string) (llm.Part, error) {
	var url string
	if json.Unmarshal(raw, &url) == nil {
		if url == "" {
			return llm.Part{}, fieldErr(path, "empty image URL")
		}
		return llm.ImageURL(url), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return llm.Part{}, fieldErr(path, "want a URL string or {\"url\": ...}, got %s", kind(raw))
	}
	url, err := str(obj, "url", path)
	if err != nil {
		return llm.Part{}, err
	}
	if url == "" {
		return llm.Part{}, fieldErr(path+".url", "empty image URL")
	}
	p := llm.ImageURL(url)
	if p.Detail, err = str(obj, "detail", path); err != nil {
		return llm.Part{}, err
	}
	return p, nil
}

// imagePart reads LangChain's standard image block: {"type": "image",
// "url"} or base64 data with a MIME type (made a data: URL).
func imagePart(obj map[string]json.RawMessage, path string) (llm.Part, error) {
	url, err := str(obj, "url", path)
	if err != nil {
		return llm.Part{}, err
	}
	if url != "" {
		return llm.ImageURL(url), nil
	}
	data, err := str(obj, "data", path)
	if err != nil {
		return llm.Part{}, err
	}
	if data == "" {
		if data, err = str(obj, "base64", path); err != nil {
			return llm.Part{}, err
		}
	}
	if data == "" {
		return llm.Part{}, fieldErr(path, "an image part needs a url or base64 data")
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return llm.Part{}, fieldErr(path+".data", "not base64: %v", err)
	}
	mime, err := str(obj, "mime_type", path)
	if err != nil {
		return llm.Part{}, err
	}
	if !strings.HasPrefix(mime, "image/") {
		return llm.Part{}, fieldErr(path+".mime_type", "want an image MIME type (image/png, ...), got %q", mime)
	}
	return llm.ImageURL("data:" + mime + ";base64," + data), nil
}

func decodeKwargs(raw json.RawMessage, path string, m *llm.Message) error {
	if !present(raw) {
		return nil
	}
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil {
		return fieldErr(path, "want an object, got %s", kind(raw))
	}
	r, err := str(kw, KwargReasoning, path)
	if err != nil {
		return err
	}
	if r != "" {
		m.Reasoning = r + m.Reasoning
	}
	sig, err := str(kw, KwargReasoningSignature, path)
	if err != nil {
		return err
	}
	if sig != "" {
		m.ReasoningSignature = sig
	}
	return nil
}

// decodeCalls reads tool calls in LangChain's form ({id, name, args}) or
// OpenAI's ({id, type: "function", function: {name, arguments}}).
func decodeCalls(raw json.RawMessage, path string) ([]llm.ToolCall, error) {
	if !present(raw) {
		return nil, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fieldErr(path, "want a list of tool call objects, got %s", kind(raw))
	}
	var calls []llm.ToolCall
	for i, obj := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		if obj == nil {
			return nil, fieldErr(p, "null tool call")
		}
		c, err := oneCall(obj, p)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func oneCall(obj map[string]json.RawMessage, path string) (llm.ToolCall, error) {
	var c llm.ToolCall
	var err error
	if c.ID, err = str(obj, "id", path); err != nil {
		return c, err
	}
	if c.ID == "" {
		c.ID = llm.NewCallID()
	}
	argsKey := "args"
	if fn := obj["function"]; present(fn) {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(fn, &f); err != nil || f == nil {
			return c, fieldErr(path+".function", "want {\"name\", \"arguments\"}, got %s", kind(fn))
		}
		obj, path, argsKey = f, path+".function", "arguments"
	}
	if c.Name, err = str(obj, "name", path); err != nil {
		return c, err
	}
	if c.Name == "" {
		return c, fieldErr(path+".name", "a tool call needs the tool's name")
	}
	c.Arguments, err = argsText(obj[argsKey], path+"."+argsKey)
	return c, err
}

// blockCall reads a tool_use or tool_call content part ({id, name,
// input|args}).
func blockCall(obj map[string]json.RawMessage, path string) (llm.ToolCall, error) {
	if present(obj["input"]) && !present(obj["args"]) {
		obj["args"] = obj["input"]
	}
	return oneCall(obj, path)
}

// argsText returns the arguments as JSON text: an object compacted in its
// key order, a string as it is (the text a model wrote), absent as "{}".
func argsText(raw json.RawMessage, path string) (string, error) {
	if !present(raw) {
		return "{}", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	if t := bytes.TrimSpace(raw); t[0] != '{' {
		return "", fieldErr(path, "tool call arguments must be a JSON object (or its text), got %s", kind(raw))
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", fieldErr(path, "bad JSON: %v", err)
	}
	return b.String(), nil
}

func decodeInvalidCalls(raw json.RawMessage, path string) ([]llm.ToolCall, error) {
	if !present(raw) {
		return nil, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fieldErr(path, "want a list of objects, got %s", kind(raw))
	}
	var calls []llm.ToolCall
	for i, obj := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		var c llm.ToolCall
		var err error
		if c.ID, err = str(obj, "id", p); err != nil {
			return nil, err
		}
		if c.ID == "" {
			c.ID = llm.NewCallID()
		}
		if c.Name, err = str(obj, "name", p); err != nil {
			return nil, err
		}
		if c.Arguments, err = str(obj, "args", p); err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// str reads an optional string field; null and absent are "".
func str(obj map[string]json.RawMessage, key, path string) (string, error) {
	raw, ok := obj[key]
	if !ok || !present(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fieldErr(path+"."+key, "want a string, got %s", kind(raw))
	}
	return s, nil
}

func present(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// kind names the JSON kind of raw for error messages.
func kind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
