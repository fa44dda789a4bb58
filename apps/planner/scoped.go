package planner

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/tool"
)

// Agencies keeps one sample agency per data scope (thread), so threads
// served by one App book from their own venues and see their own bookings.
// The agencies live in memory: Delete drops a scope's (the app's
// DeleteScope, called when its thread is deleted), and at most Max scopes
// are kept, the least recently used dropped first, so a long-running
// server does not grow with every thread it ever served. It is safe for
// concurrent use.
type Agencies struct {
	// Max bounds the scopes kept (0: DefaultMaxAgencies).
	Max int

	mu  sync.Mutex
	per map[string]*list.Element // of *scopedAgency
	lru list.List                // most recently used first
}

// DefaultMaxAgencies is how many scopes' agencies Agencies keeps by
// default; a scope dropped from memory starts again from a fresh sample.
const DefaultMaxAgencies = 10_000

type scopedAgency struct {
	scope  string
	agency *Agency
}

// For returns scope's agency, made with NewAgency on first use.
func (as *Agencies) For(scope string) *Agency {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.per == nil {
		as.per = map[string]*list.Element{}
	}
	if e, ok := as.per[scope]; ok {
		as.lru.MoveToFront(e)
		return e.Value.(*scopedAgency).agency
	}
	a := NewAgency()
	as.per[scope] = as.lru.PushFront(&scopedAgency{scope: scope, agency: a})
	max := as.Max
	if max <= 0 {
		max = DefaultMaxAgencies
	}
	for as.lru.Len() > max {
		old := as.lru.Back()
		as.lru.Remove(old)
		delete(as.per, old.Value.(*scopedAgency).scope)
	}
	return a
}

// Delete drops scope's agency; the scope's next use starts from a fresh
// sample. Deleting a scope that has none is not an error.
func (as *Agencies) Delete(scope string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if e, ok := as.per[scope]; ok {
		as.lru.Remove(e)
		delete(as.per, scope)
	}
}

// Len reports how many scopes have an agency in memory.
func (as *Agencies) Len() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lru.Len()
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
