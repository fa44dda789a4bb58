package middleware

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// ReadResultTool is the name of the tool Offload gives the agent.
const ReadResultTool = "read_tool_result"

// OffloadConfig configures offloading of large tool results.
type OffloadConfig struct {
	// Name names the middleware (default "offload").
	Name string
	// MinRunes is the result size, in runes, from which a result is
	// offloaded (default 4000).
	MinRunes int
	// Preview is how many leading runes of an offloaded result the model
	// still sees (default 500).
	Preview int
	// Namespace is the store namespace results go under, followed by the
	// thread ID when the run has one (default ["tool_results"]).
	Namespace []string
}

// Offload returns a middleware that puts each tool result of MinRunes or
// more in the run's store (graph.WithStore) under the call's ID, and gives
// the model a preview and the handle instead. Its read tool
// (ReadResultTool: a handle, an offset and a length in runes) reads the
// stored result back a page at a time. Errors and results of the read
// tool itself are never offloaded. A run without a store fails the call
// with an error saying so.
func Offload(cfg OffloadConfig) (Middleware, error) {
	if cfg.Name == "" {
		cfg.Name = "offload"
	}
	if cfg.MinRunes == 0 {
		cfg.MinRunes = 4000
	}
	if cfg.Preview == 0 {
		cfg.Preview = 500
	}
	if cfg.Namespace == nil {
		cfg.Namespace = []string{"tool_results"}
	}
	if cfg.MinRunes < 0 || cfg.Preview < 0 || cfg.Preview >= cfg.MinRunes {
		return nil, fmt.Errorf("offload: MinRunes (%d) and Preview (%d) must be positive, Preview below MinRunes", cfg.MinRunes, cfg.Preview)
	}
	if err := store.ValidateNamespace(cfg.Namespace); err != nil {
		return nil, fmt.Errorf("offload: %w", err)
	}
	o := &offload{cfg: cfg}
	o.read = tool.MustFunc(ReadResultTool,
		"Read part of a large tool result that was stored instead of shown. Give its handle, the rune offset to start at, and how many runes to read (default 2000).",
		o.readResult, tool.ReadOnly())
	return o, nil
}

type offload struct {
	cfg  OffloadConfig
	read tool.Tool
}

// stored is what the store holds for an offloaded result.
type stored struct {
	Tool string `json:"tool"`
	Text string `json:"text"`
}

func (o *offload) Name() string { return o.cfg.Name }

// Tools returns the read tool.
func (o *offload) Tools() []tool.Tool { return []tool.Tool{o.read} }

func (o *offload) namespace(ctx context.Context) []string {
	ns := slices.Clone(o.cfg.Namespace)
	if th := graph.ThreadID(ctx); th != "" {
		ns = append(ns, th)
	}
	return ns
}

func (o *offload) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error) {
	res, err := next(ctx, call)
	if err != nil || res == nil || res.Message.IsError || call.Call.Name == ReadResultTool {
		return res, err
	}
	text := res.Message.Text()
	n := utf8.RuneCountInString(text)
	if n < o.cfg.MinRunes {
		return res, nil
	}
	st := graph.StoreFrom(ctx)
	if st == nil {
		return nil, errors.New("offload: the run has no store; give it one with graph.WithStore, or remove the offload middleware")
	}
	handle := call.Call.ID
	if err := store.Put(ctx, st, o.namespace(ctx), handle, stored{Tool: call.Call.Name, Text: text}, store.PutOptions{}); err != nil {
		return nil, fmt.Errorf("offload: store the result of call %s: %w", handle, err)
	}
	preview := string([]rune(text)[:o.cfg.Preview])
	out := *res
	out.Message = res.Message.Clone()
	out.Message.Parts = []llm.Part{llm.Text(fmt.Sprintf(
		"[This result is %d characters long and was stored with handle %q. Its first %d characters follow; read the rest with the %s tool, {\"handle\": %q, \"offset\": %d}.]\n\n%s",
		n, handle, o.cfg.Preview, ReadResultTool, handle, o.cfg.Preview, preview))}
	return &out, nil
}

type readArgs struct {
	Handle string `json:"handle" jsonschema:"the handle of the stored result"`
	Offset int    `json:"offset,omitempty" jsonschema:"the rune offset to start reading at"`
	Length int    `json:"length,omitempty" jsonschema:"how many runes to read (default 2000)"`
}

func (o *offload) readResult(ctx context.Context, a readArgs) (string, error) {
	if a.Handle == "" {
		return "", tool.BadArguments(ReadResultTool, "handle is empty; give the handle the stored result named")
	}
	if a.Offset < 0 || a.Length < 0 {
		return "", tool.BadArguments(ReadResultTool, "offset and length must not be negative")
	}
	if a.Length == 0 {
		a.Length = 2000
	}
	st := graph.StoreFrom(ctx)
	if st == nil {
		return "", errors.New("the run has no store, so no result was stored")
	}
	v, err := store.Get[stored](ctx, st, o.namespace(ctx), a.Handle)
	if err != nil {
		return "", fmt.Errorf("no stored result has handle %q: %w", a.Handle, err)
	}
	r := []rune(v.Text)
	if a.Offset >= len(r) {
		return fmt.Sprintf("[The result has %d characters; offset %d is past its end.]", len(r), a.Offset), nil
	}
	end := min(len(r), a.Offset+a.Length)
	s := string(r[a.Offset:end])
	if end < len(r) {
		s += fmt.Sprintf("\n\n[%d more characters; continue at offset %d.]", len(r)-end, end)
	}
	return s, nil
}
