package llm

import (
	"encoding/json"
	"iter"
	"slices"
	"strings"
)

// Assembler builds a Response from streamed chunks. It is the one place
// where provider stream quirks are absorbed, so it accepts fragments in any
// order and any size:
//
//   - text, reasoning and signature fragments are concatenated;
//   - tool-call fragments are grouped by call: a fragment carrying an ID
//     joins the call with that ID, wherever its index points; one without
//     an ID joins the latest call at its index; arguments may arrive before
//     the name or the ID, and indices may interleave;
//   - a provider that numbers every call 0 but gives each its own ID gets
//     one call per ID; a name arriving for a call whose arguments are
//     already a complete JSON value starts a new call;
//   - a name repeated in every fragment is kept once;
//   - a reply holding calls finishes with FinishToolCalls even when the
//     provider said "stop";
//   - usage is the field-wise maximum of the usage reports (providers send
//     cumulative figures).
//
// Calls come out ordered by index, then by first appearance; a call without
// an ID gets a fresh one and one without arguments gets "{}".
//
// The reply is bounded by Limits: the chunk that would take it over a
// limit is not added, and Add returns a *LimitError (then and for every
// later chunk), so a stream that never ends cannot exhaust memory.
//
// The zero value is ready to use; an Assembler is not safe for concurrent
// use.
type Assembler struct {
	// ID is the ID given to the assembled message (empty: a fresh one).
	ID string
	// Limits bound the reply (zero fields: the defaults, see Limits).
	Limits Limits
	// Model names the model in a *LimitError (optional).
	Model string

	text, reasoning, sig strings.Builder
	calls                []callSlot
	usage                Usage
	seenUsage            bool
	finish               FinishReason
	model                string
	meter                Meter
	err                  error
}

type callSlot struct {
	index int
	id    string
	name  string
	args  []byte
}

// Add adds a chunk. It returns a *LimitError, and adds nothing, once the
// reply would exceed Limits (or Limits is invalid); the reply assembled so
// far stays available.
func (a *Assembler) Add(c Chunk) error {
	if a.err != nil {
		return a.err
	}
	if err := a.Limits.Validate(); err != nil {
		a.err = err
		return err
	}
	a.meter.Limits, a.meter.Model = a.Limits, a.Model
	if err := a.meter.Add(c); err != nil {
		a.err = err
		return err
	}
	if limit := a.Limits.WithDefaults().ToolCalls; int64(len(a.calls)+len(c.ToolCalls)) > limit {
		// Counted apart from the meter: calls without IDs that reuse an
		// index can still start new calls here.
		before := len(a.calls)
		for i := range c.ToolCalls {
			a.slotFor(&c.ToolCalls[i])
		}
		if int64(len(a.calls)) > limit {
			a.calls = a.calls[:before]
			a.err = &LimitError{Limit: "ToolCalls", Max: limit, Model: a.Model}
			return a.err
		}
		a.calls = a.calls[:before]
	}
	a.text.WriteString(c.Text)
	a.reasoning.WriteString(c.Reasoning)
	a.sig.WriteString(c.ReasoningSignature)
	for i := range c.ToolCalls {
		a.addCall(&c.ToolCalls[i])
	}
	if u := c.Usage; u != nil {
		a.seenUsage = true
		a.usage.InputTokens = max(a.usage.InputTokens, u.InputTokens)
		a.usage.CachedInputTokens = max(a.usage.CachedInputTokens, u.CachedInputTokens)
		a.usage.OutputTokens = max(a.usage.OutputTokens, u.OutputTokens)
		a.usage.ReasoningTokens = max(a.usage.ReasoningTokens, u.ReasoningTokens)
		a.usage.Requests = max(a.usage.Requests, u.Requests)
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if c.Model != "" {
		a.model = c.Model
	}
	return nil
}

func (a *Assembler) addCall(d *ToolCallDelta) {
	s := a.slotFor(d)
	if d.Name != "" && d.Name != s.name {
		s.name += d.Name
	}
	s.args = append(s.args, d.Arguments...)
}

// slotFor finds or starts the call a fragment belongs to.
func (a *Assembler) slotFor(d *ToolCallDelta) *callSlot {
	if d.ID != "" {
		for i := range a.calls {
			if a.calls[i].id == d.ID {
				return &a.calls[i]
			}
		}
	}
	if s := a.latestAt(d.Index); s != nil {
		switch {
		case d.ID != "" && s.id != "" && s.id != d.ID:
			// Another call reusing the index.
		case d.ID == "" && d.Name != "" && s.name != "" && d.Name != s.name && completeJSON(s.args):
			// A new call reusing the index, without IDs.
		default:
			if s.id == "" {
				s.id = d.ID
			}
			return s
		}
	}
	a.calls = append(a.calls, callSlot{index: d.Index, id: d.ID})
	return &a.calls[len(a.calls)-1]
}

func (a *Assembler) latestAt(index int) *callSlot {
	for i := len(a.calls) - 1; i >= 0; i-- {
		if a.calls[i].index == index {
			return &a.calls[i]
		}
	}
	return nil
}

func completeJSON(b []byte) bool { return len(b) > 0 && json.Valid(b) }

// Text returns the answer text assembled so far.
func (a *Assembler) Text() string { return a.text.String() }

// Response returns the assembled reply. It can be called more than once.
func (a *Assembler) Response() *Response {
	id := a.ID
	if id == "" {
		id = NewID()
		a.ID = id
	}
	m := Message{ID: id, Role: RoleAssistant, Reasoning: a.reasoning.String(), ReasoningSignature: a.sig.String()}
	if t := a.text.String(); t != "" {
		m.Parts = []Part{Text(t)}
	}
	order := make([]int, 0, len(a.calls))
	for i, s := range a.calls {
		if s.name != "" || len(s.args) > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int { return a.calls[x].index - a.calls[y].index })
	for _, i := range order {
		s := &a.calls[i]
		if s.id == "" {
			s.id = NewCallID()
		}
		args := string(s.args)
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: s.id, Name: s.name, Arguments: args})
	}
	finish := a.finish
	switch {
	case (finish == "" || finish == FinishStop) && len(m.ToolCalls) > 0:
		// Some providers say "stop" even when the reply holds calls;
		// callers decide by the calls, and so does the reason.
		finish = FinishToolCalls
	case finish == "":
		finish = FinishStop
	}
	return &Response{Message: m, Usage: a.usage, FinishReason: finish, Model: a.model}
}

// Assemble drains a stream into one Response, within the default Limits.
// On a stream error, or a reply over a limit, it returns the error and what
// arrived before it (so a caller can log it); breaking off the stream at a
// limit stops the request.
func Assemble(stream iter.Seq2[Chunk, error]) (*Response, error) {
	var a Assembler
	for c, err := range stream {
		if err != nil {
			return a.Response(), err
		}
		if err := a.Add(c); err != nil {
			return a.Response(), err
		}
	}
	return a.Response(), nil
}
