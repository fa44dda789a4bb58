package llmtest

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/llm"
)

// Request is a request the model received, recorded as it arrived: a deep
// copy of the llm.Request (later changes by the caller do not show) and
// where it came from.
type Request struct {
	llm.Request
	// N numbers requests from 1 in the order they arrived.
	N int
	// Node, Namespace and TaskID say which graph task called (see
	// graph.NodeName, graph.Namespace, graph.TaskID); empty outside a
	// graph node.
	Node      string
	Namespace string
	TaskID    string
	// Streamed is true for Stream, false for Generate.
	Streamed bool
}

// LastUser returns the text of the last user message, or "".
func (r *Request) LastUser() string {
	for _, m := range slices.Backward(r.Messages) {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// System returns the text of the system messages, joined by newlines.
func (r *Request) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == llm.RoleSystem {
			parts = append(parts, m.Text())
		}
	}
	return strings.Join(parts, "\n")
}

// ToolNames returns the names of the tools offered, in order.
func (r *Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// where describes the request's origin for error messages.
func (r *Request) where() string {
	switch {
	case r.Node == "":
		return "outside any graph node"
	case r.Namespace == "":
		return "from node " + quote(r.Node)
	}
	return "from node " + quote(r.Node) + " in namespace " + quote(r.Namespace)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Matcher chooses requests for a rule (see Model.When). It must not modify
// the request. Write your own as a plain function, or combine the ones
// below with And, Or and Not.
type Matcher func(r *Request) bool

// Any matches every request.
func Any() Matcher { return func(*Request) bool { return true } }

// Node matches requests made from the graph node with this name, in any
// namespace.
func Node(name string) Matcher { return func(r *Request) bool { return r.Node == name } }

// Namespace matches requests made inside a graph namespace starting with
// prefix. A subgraph node "research" runs in namespace "research:<task
// ID>", so Namespace("research:") matches everything inside it (nested
// subgraphs included). Namespace("") matches every request.
func Namespace(prefix string) Matcher {
	return func(r *Request) bool { return strings.HasPrefix(r.Namespace, prefix) }
}

// LastUserContains matches requests whose last user message contains s.
func LastUserContains(s string) Matcher {
	return func(r *Request) bool { return strings.Contains(r.LastUser(), s) }
}

// HasTool matches requests that offer a tool with this name.
func HasTool(name string) Matcher {
	return func(r *Request) bool { return slices.Contains(r.ToolNames(), name) }
}

// LastIsToolResult matches requests whose last message is a tool result:
// the turn after tool calls, where an agent reads what its tools returned.
func LastIsToolResult() Matcher {
	return func(r *Request) bool {
		return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == llm.RoleTool
	}
}

// Streamed matches requests made with Stream.
func Streamed() Matcher { return func(r *Request) bool { return r.Streamed } }

// And matches requests every matcher matches (all requests when none are
// given).
func And(ms ...Matcher) Matcher {
	return func(r *Request) bool {
		for _, m := range ms {
			if m != nil && !m(r) {
				return false
			}
		}
		return true
	}
}

// Or matches requests some matcher matches (none when none are given).
func Or(ms ...Matcher) Matcher {
	return func(r *Request) bool {
		for _, m := range ms {
			if m != nil && m(r) {
				return true
			}
		}
		return false
	}
}

// Not matches requests m does not match.
func Not(m Matcher) Matcher { return func(r *Request) bool { return m == nil || !m(r) } }

// copyRequest returns a deep copy of req.
func copyRequest(req *llm.Request) llm.Request {
	c := *req
	c.Messages = slices.Clone(req.Messages)
	for i, m := range c.Messages {
		c.Messages[i] = m.Clone()
	}
	c.Tools = slices.Clone(req.Tools)
	for i := range c.Tools {
		c.Tools[i].Parameters = slices.Clone(c.Tools[i].Parameters)
	}
	c.Stop = slices.Clone(req.Stop)
	c.ParallelToolCalls = clonePtr(req.ParallelToolCalls)
	c.Temperature = clonePtr(req.Temperature)
	c.TopP = clonePtr(req.TopP)
	c.Reasoning = clonePtr(req.Reasoning)
	if rf := clonePtr(req.ResponseFormat); rf != nil {
		rf.Schema = slices.Clone(rf.Schema)
		c.ResponseFormat = rf
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
