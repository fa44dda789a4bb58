package planexec

import (
	"context"
	"encoding/json"
	"fmt"

	"maps"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// The built-in tools a step uses to change its tool packs (offered when
// Config.Packs is set).
const (
	AddPackToolName    = "tools_add"
	RemovePackToolName = "tools_remove"
)

// packSet knows the packs and works out which are active.
//
// The active packs are not stored in state: they follow from the step's
// own history (its successful tools_add and tools_remove calls, replayed
// in order over Config.ActivePacks). A tool cannot write state (its result
// is text), and the loop's model node reads its tool subset before the
// tool round that would change it, so a derived set is what keeps one
// source of truth: it survives interrupts and resumes with nothing extra
// to save, and the model wrapper and the tools' guard always agree.
type packSet struct {
	packs   map[string][]string // pack → tool names
	byTool  map[string]string   // tool name → pack
	initial []string
}

func newPackSet(packs map[string][]tool.Tool, initial []string) *packSet {
	ps := &packSet{packs: map[string][]string{}, byTool: map[string]string{}, initial: initial}
	for name, tools := range packs {
		for _, t := range tools {
			ps.packs[name] = append(ps.packs[name], t.Info().Name)
			ps.byTool[t.Info().Name] = name
		}
	}
	return ps
}

func (ps *packSet) empty() bool { return len(ps.packs) == 0 }

// active replays the pack calls of a history.
func (ps *packSet) active(history []llm.Message) map[string]bool {
	on := make(map[string]bool, len(ps.packs))
	for _, p := range ps.initial {
		on[p] = true
	}
	failed := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range history {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
			failed[m.ToolCallID] = m.IsError
		}
	}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			if (c.Name != AddPackToolName && c.Name != RemovePackToolName) || !answered[c.ID] || failed[c.ID] {
				continue
			}
			var a packArgs
			if json.Unmarshal([]byte(c.Arguments), &a) != nil || ps.packs[a.Pack] == nil {
				continue
			}
			on[a.Pack] = c.Name == AddPackToolName
		}
	}
	return on
}

// activeIn reports whether pack is active in the history of the running
// tool call's step.
func (ps *packSet) activeIn(ctx context.Context, pack string) bool {
	s, ok := tool.StateFrom(ctx)
	if !ok {
		return true // called outside the loop (a test, a node of one's own): nothing to guard
	}
	return ps.active(react.Messages.Get(s))[pack]
}

// filter returns the specs the model is offered: every tool outside the
// packs, and the tools of active packs.
func (ps *packSet) filter(specs []llm.ToolSpec, history []llm.Message) []llm.ToolSpec {
	on := ps.active(history)
	out := make([]llm.ToolSpec, 0, len(specs))
	for _, s := range specs {
		if p, inPack := ps.byTool[s.Name]; !inPack || on[p] {
			out = append(out, s)
		}
	}
	return out
}

func packInactiveError(name, pack string) error {
	return fmt.Errorf("the tool %q belongs to the tool pack %q, which is not in this step's context; call %s with pack %q first",
		name, pack, AddPackToolName, pack)
}

type packArgs struct {
	Pack string `json:"pack"`
}

// packTool is tools_add or tools_remove. It only checks the pack name and
// says what changed: the change itself is read back from the history.
type packTool struct {
	add  bool
	ps   *packSet
	info tool.Info
}

func newPackTool(add bool, ps *packSet) *packTool {
	names := slices.Sorted(maps.Keys(ps.packs))
	var list strings.Builder
	for _, n := range names {
		fmt.Fprintf(&list, "\n- %s: %s", n, strings.Join(ps.packs[n], ", "))
	}
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"pack": map[string]any{"type": "string", "enum": names, "description": "the tool pack's name"},
		},
		"required":             []string{"pack"},
		"additionalProperties": false,
	})
	t := &packTool{add: add, ps: ps, info: tool.Info{Parameters: params, ReadOnly: true}}
	if add {
		t.info.Name = AddPackToolName
		t.info.Description = "Add a tool pack to this step's context: its tools are offered from your next reply on. The packs:" + list.String()
	} else {
		t.info.Name = RemovePackToolName
		t.info.Description = "Remove a tool pack from this step's context when you no longer need its tools. The packs:" + list.String()
	}
	return t
}

func (t *packTool) Info() tool.Info { return t.info }

func (t *packTool) ValidateArguments(raw json.RawMessage) error {
	var a packArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.BadArguments(t.info.Name, "the arguments must be a JSON object with a \"pack\" string")
	}
	if t.ps.packs[a.Pack] == nil {
		return tool.BadArguments(t.info.Name, "there is no tool pack %q; the packs are %s", a.Pack, strings.Join(slices.Sorted(maps.Keys(t.ps.packs)), ", "))
	}
	return nil
}

func (t *packTool) Call(_ context.Context, raw json.RawMessage) (string, error) {
	if err := t.ValidateArguments(raw); err != nil {
		return "", err
	}
	var a packArgs
	_ = json.Unmarshal(raw, &a)
	tools := strings.Join(t.ps.packs[a.Pack], ", ")
	if t.add {
		return fmt.Sprintf("Tool pack %q is in your context: %s can be called from your next reply on.", a.Pack, tools), nil
	}
	return fmt.Sprintf("Tool pack %q left your context: %s are no longer offered.", a.Pack, tools), nil
}

// packs offers the model only the tools of active packs (and every tool
// outside the packs), as middleware of the step loop's chain. It changes
// a copy of the request, never the caller's.
type packs struct{ ps *packSet }

func (packs) Name() string { return "tool_packs" }

func (p packs) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	if req := call.Request; req != nil && len(req.Tools) > 0 {
		c := *req
		c.Tools = p.ps.filter(req.Tools, req.Messages)
		call.Request = &c
	}
	return next(ctx, call)
}
