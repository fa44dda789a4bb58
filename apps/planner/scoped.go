package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/tool"
)

// Agencies keeps one sample agency per data scope (thread), so threads
// served by one App book from their own venues and see their own bookings.
// It is safe for concurrent use.
type Agencies struct {
	mu  sync.Mutex
	per map[string]*Agency
}

// For returns scope's agency, made with NewAgency on first use.
func (as *Agencies) For(scope string) *Agency {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.per == nil {
		as.per = map[string]*Agency{}
	}
	a, ok := as.per[scope]
	if !ok {
		a = NewAgency()
		as.per[scope] = a
	}
	return a
}

// Tools returns the agency's tools, each calling the same tool of the
// agency of the run's scope (apps.Scope; "" is a scope too).
func (as *Agencies) Tools() []tool.Tool {
	template := NewAgency().Tools()
	out := make([]tool.Tool, len(template))
	for i, t := range template {
		out[i] = scopedTool{template: t, index: i, agencies: as}
	}
	return out
}

// scopedTool keeps the template's description, argument checks and
// approval summary (they do not depend on the agency's state) and runs
// the call on the scope's agency.
type scopedTool struct {
	template tool.Tool
	index    int
	agencies *Agencies
}

func (t scopedTool) ValidateArguments(args json.RawMessage) error {
	if v, ok := t.template.(tool.Validator); ok {
		return v.ValidateArguments(args)
	}
	return nil
}

func (t scopedTool) Summarize(args json.RawMessage) string {
	if s, ok := t.template.(tool.Summarizer); ok {
		return s.Summarize(args)
	}
	return ""
}

func (t scopedTool) Info() tool.Info { return t.template.Info() }

func (t scopedTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	tools := t.agencies.For(apps.Scope(ctx)).Tools()
	if name := t.template.Info().Name; t.index >= len(tools) || tools[t.index].Info().Name != name {
		return "", fmt.Errorf("planner: the agency has no tool %q", name)
	}
	return tools[t.index].Call(ctx, args)
}
