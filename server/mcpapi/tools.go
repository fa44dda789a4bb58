package mcpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/stateschema"
)

// Arguments every tool takes besides its input.
const (
	// ArgMessage is a chat assistant's new user message.
	ArgMessage = "message"
	// ArgThread continues a thread (a result's thread_id).
	ArgThread = "thread_id"
	// ArgAnswer answers the question a waiting thread asks.
	ArgAnswer = "answer"
)

// maxNameLen bounds tool names: MCP allows 128 characters, but the
// function-calling APIs of most model vendors (which MCP hosts pass tools
// to) allow 64 of [A-Za-z0-9_-].
const maxNameLen = 64

// maxTools bounds the assistants listed as tools.
const maxTools = 1000

// entry is one assistant as a tool.
type entry struct {
	assistant db.Assistant
	tool      *mcp.Tool
	chat      bool
	// stateKeys are the graph's state keys when it is not a chat (a key
	// named thread_id or answer is then input, not the control argument).
	stateKeys map[string]bool
}

var messagesType = reflect.TypeFor[[]llm.Message]()

// tools lists the tenant's assistants as tools, oldest first, with names
// that are valid and unique: an assistant's name sanitized, and when an
// older assistant has it, the name plus a tag of the assistant's ID (so a
// tool keeps its name when others are added or deleted).
func (h *Handler) tools(ctx context.Context, tenant string) ([]entry, error) {
	var all []db.Assistant
	for off := 0; len(all) < maxTools; off += wire.MaxLimit {
		page, err := h.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{Query: db.Query{Limit: wire.MaxLimit, Offset: off, SortBy: "created_at", SortOrder: "asc"}})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < wire.MaxLimit {
			break
		}
	}
	if len(all) > maxTools {
		all = all[:maxTools]
	}
	used := map[string]bool{}
	out := make([]entry, 0, len(all))
	for _, a := range all {
		name := toolName(a.Name)
		if name == "" {
			name = toolName(a.ID)
		}
		if used[name] {
			name = withTag(name, a.ID)
		}
		used[name] = true
		e, err := h.entry(ctx, tenant, a, name)
		if err != nil {
			h.log().Warn("mcp: an assistant is left out of the tools: its graph does not build", "assistant", a.ID, "graph", a.GraphID, "err", err)
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// toolName turns s into a tool name: runs of characters other than
// letters, digits, '_' and '-' become one '_', at most maxNameLen long.
func toolName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.TrimSpace(s) {
		ok := r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		switch {
		case ok:
			b.WriteRune(r)
			under = false
		case !under:
			b.WriteByte('_')
			under = true
		}
	}
	name := strings.Trim(b.String(), "_")
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
	}
	return name
}

// withTag makes name unique with a tag of the assistant ID.
func withTag(name, id string) string {
	sum := sha256.Sum256([]byte(id))
	tag := "_" + hex.EncodeToString(sum[:4])
	if len(name)+len(tag) > maxNameLen {
		name = name[:maxNameLen-len(tag)]
	}
	return name + tag
}

// entry describes assistant a as the tool name.
func (h *Handler) entry(ctx context.Context, tenant string, a db.Assistant, name string) (entry, error) {
	g, err := h.Graphs.Graph(ctx, tenant, a)
	if err != nil {
		return entry{}, err
	}
	e := entry{assistant: a, chat: isChat(g)}
	desc := a.Description
	if desc == "" {
		if spec, ok := h.Graphs.Spec(a.GraphID); ok {
			desc = spec.Description
		}
	}
	if desc == "" {
		desc = fmt.Sprintf("The Trellis assistant %q (graph %s).", cmpOr(a.Name, a.ID), a.GraphID)
	}
	thread := &jsonschema.Schema{Type: "string", Description: "Continue this thread: the thread_id of an earlier result. Omit it to start a new one."}
	answer := &jsonschema.Schema{Description: "The answer to the question the thread waits on (a result with status \"waiting\" shows it and its schema): text, true/false, or a JSON value that fits the schema. Pass it with thread_id and nothing else."}
	var in *jsonschema.Schema
	if e.chat {
		desc += "\n\nSend a message; the result is the assistant's answer and the thread_id to continue the conversation."
		in = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			ArgMessage: {Type: "string", Description: "Your message to the assistant."},
			ArgThread:  thread,
			ArgAnswer:  answer,
		}, PropertyOrder: []string{ArgMessage, ArgThread, ArgAnswer}}
	} else {
		desc += "\n\nThe arguments are the run's input (state keys); the result's structured content holds the final state and the thread_id."
		in = inputSchema(g)
		e.stateKeys = map[string]bool{}
		for k := range in.Properties {
			e.stateKeys[k] = true
		}
		for k, s := range map[string]*jsonschema.Schema{ArgThread: thread, ArgAnswer: answer} {
			if _, taken := in.Properties[k]; !taken {
				in.Properties[k] = s
				in.PropertyOrder = append(in.PropertyOrder, k)
			}
		}
	}
	out := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"thread_id": {Type: "string", Description: "the run's thread: pass it to continue"},
		"run_id":    {Type: "string"},
		"status":    {Type: "string", Enum: []any{StatusDone, StatusWaiting}, Description: "done, or waiting for an answer"},
		"answer":    {Type: "string", Description: "the assistant's final answer (chat assistants)"},
		"values":    {Type: "object", Description: "the thread's state after the run (other graphs)"},
		"question":  {Type: "object", Description: "what the waiting run asks, and the schema of the answer"},
	}, Required: []string{"thread_id", "status"}}
	e.tool = &mcp.Tool{Name: name, Title: cmpOr(a.Name, a.ID), Description: desc, InputSchema: in, OutputSchema: out,
		Meta: mcp.Meta{"trellis/assistant_id": a.ID, "trellis/graph_id": a.GraphID}}
	return e, nil
}

// isChat reports whether g keeps a conversation: a "messages" key of
// model messages.
func isChat(g *graph.Graph) bool {
	for _, k := range g.Keys() {
		if k.Name == "messages" && k.Type == messagesType {
			return true
		}
	}
	return false
}

// inputSchema is the object schema of g's state keys (the run's input).
func inputSchema(g *graph.Graph) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, k := range g.Keys() {
		ks := stateschema.Key(k.Type)
		s.Properties[k.Name] = ks
		s.PropertyOrder = append(s.PropertyOrder, k.Name)
	}
	return s
}

// listTools answers tools/list.
func (h *Handler) listTools(ctx context.Context, tenant string) (*mcp.ListToolsResult, error) {
	es, err := h.tools(ctx, tenant)
	if err != nil {
		h.log().Error("mcp: listing the assistants failed", "tenant", tenant, "err", err)
		return nil, fmt.Errorf("listing the assistants failed: %w", err)
	}
	res := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, len(es))}
	for i, e := range es {
		res.Tools[i] = e.tool
	}
	return res, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
