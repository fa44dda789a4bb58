package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/tool"
)

// pending is one interrupt a thread waits on, as the run service records
// it (LangGraph's __interrupt__ entries).
type pending struct {
	ID     string          `json:"id"`
	Value  json.RawMessage `json:"value"`
	Schema json.RawMessage `json:"response_schema,omitempty"`
}

// pendingFrom reads a thread row's interrupts (by task, each a list),
// ordered by interrupt ID so the first is stable.
func pendingFrom(raw json.RawMessage) []pending {
	var byTask map[string][]pending
	if len(raw) == 0 || json.Unmarshal(raw, &byTask) != nil {
		return nil
	}
	var out []pending
	for _, list := range byTask {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b pending) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// question describes what p asks.
func question(p pending) *Question {
	return &Question{InterruptID: p.ID, Text: questionText(p), Schema: p.Schema, Payload: p.Value}
}

// questionText renders the interrupt's payload as readable text, for the
// agents' known kinds; any other payload as its JSON.
func questionText(p pending) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(p.Value, &k)
	var b strings.Builder
	problems := func(ps ...string) {
		ps = slices.DeleteFunc(ps, func(s string) bool { return s == "" })
		if len(ps) > 0 {
			fmt.Fprintf(&b, "(The last answer did not fit: %s)\n", strings.Join(ps, "; "))
		}
	}
	switch k.Kind {
	case planexec.AskKind:
		var a planexec.Ask
		_ = json.Unmarshal(p.Value, &a)
		problems(a.Problems...)
		b.WriteString(a.Question)
		switch a.Mode {
		case planexec.AskSelect:
			fmt.Fprintf(&b, " (one of: %s)", strings.Join(a.Options, ", "))
		case planexec.AskForm:
			for _, f := range a.Fields {
				req := "optional"
				if f.Required {
					req = "required"
				}
				fmt.Fprintf(&b, "\n- %s (%s, %s, %s)", f.Label, f.Key, f.Type, req)
			}
		}
	case planexec.ReviewKind:
		var r planexec.PlanReview
		_ = json.Unmarshal(p.Value, &r)
		problems(r.Problem)
		fmt.Fprintf(&b, "Run this plan? %s", r.Plan.Task)
		for i, st := range r.Plan.Steps {
			fmt.Fprintf(&b, "\n%d. %s", i+1, st.Title)
		}
		b.WriteString("\nApprove it, or reject it with what to change.")
	case tool.ApprovalKind:
		var r tool.ApprovalRequest
		_ = json.Unmarshal(p.Value, &r)
		problems(r.Problem)
		fmt.Fprintf(&b, "Approve this call? %s %s", r.Tool, compact(r.Arguments))
		if r.Summary != "" {
			b.WriteString("\n" + r.Summary)
		}
	case router.QuestionKind:
		var q router.Question
		_ = json.Unmarshal(p.Value, &q)
		b.WriteString(q.Question)
	default:
		fmt.Fprintf(&b, "The run waits for an answer to: %s", compact(p.Value))
	}
	return b.String()
}

// elicit asks the person through MCP elicitation and returns the resume
// value, or nil and why not: "unsupported" (the client has no
// elicitation), "declined", "cancelled", or "failed". problem, when set,
// says why the last answer did not fit.
func (h *Handler) elicit(ctx context.Context, c *call, p pending, problem string) (json.RawMessage, string) {
	if c.session == nil || h.Stateless {
		return nil, "unsupported" // stateless: no session to carry a request to the client
	}
	ip := c.session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, "unsupported"
	}
	el := elicitationFor(p)
	msg := questionText(p)
	if problem != "" {
		msg = "(The last answer did not fit: " + problem + ")\n" + msg
	}
	if el.raw {
		msg += "\n\nAnswer as JSON that fits: " + compact(p.Schema)
	}
	res, err := c.session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: el.schema})
	if err != nil {
		h.log().Warn("mcp: elicitation failed; the result says how to answer instead", "thread", c.thread, "err", err)
		return nil, "failed"
	}
	switch res.Action {
	case "accept":
	case "decline":
		return nil, "declined"
	default:
		return nil, "cancelled"
	}
	return el.value(res.Content), ""
}

// elicitation is an interrupt's answer schema mapped to MCP elicitation,
// which takes only an object of primitive properties.
type elicitation struct {
	schema map[string]any
	// wrapped: the answer is the "answer" property's value (a primitive
	// schema wrapped in an object).
	wrapped bool
	// raw: the schema could not be mapped; the person types JSON (or
	// text) into one "answer" field.
	raw bool
}

// value is the resume value for the content the person submitted.
func (e elicitation) value(content map[string]any) json.RawMessage {
	if !e.wrapped && !e.raw {
		return mustJSON(content)
	}
	v := content[ArgAnswer]
	if s, ok := v.(string); ok && e.raw {
		if t := strings.TrimSpace(s); json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	return mustJSON(v)
}

// elicitationFor is how p is asked through elicitation: plan reviews and
// tool approvals as a choice of approve or reject with an optional reason
// (their answer schemas leave the action's values to the text, and their
// edit forms need nested objects, which elicitation cannot ask for: an
// edit is answered with the tool's answer argument instead); anything
// else by mapSchema.
func elicitationFor(p pending) elicitation {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(p.Value, &k)
	why := ""
	switch k.Kind {
	case planexec.ReviewKind:
		why = "feedback"
	case tool.ApprovalKind:
		why = "message"
	default:
		return mapSchema(p.Schema)
	}
	return elicitation{schema: map[string]any{"type": "object", "properties": map[string]any{
		"action": map[string]any{"type": "string", "title": "Decision", "enum": []string{"approve", "reject"}},
		why:      map[string]any{"type": "string", "title": "Why (when rejecting)", "description": "what to change, or why not"},
	}, "required": []string{"action"}}}
}

// mapSchema maps an answer schema to an elicitation schema:
//   - an object of primitive properties is asked as it is, minus optional
//     properties that are not primitive (a tool approval's edited
//     arguments, a plan review's edited plan);
//   - a primitive (a string, an enum, a number, a boolean) is asked as an
//     object with one property, "answer";
//   - anyOf/oneOf: the first alternative that is such an object, else the
//     first primitive one;
//   - anything else (nested objects, arrays, no schema) is one text field
//     "answer", read as JSON when it parses and as text otherwise, and the
//     message shows the schema.
func mapSchema(raw json.RawMessage) elicitation {
	var s map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &s) == nil {
		alts := []map[string]any{s}
		for _, k := range []string{"anyOf", "oneOf"} {
			if list, ok := s[k].([]any); ok {
				alts = nil
				for _, a := range list {
					if m, ok := a.(map[string]any); ok {
						alts = append(alts, m)
					}
				}
			}
		}
		for _, a := range alts {
			if obj, ok := flatObject(a); ok {
				return elicitation{schema: obj}
			}
		}
		for _, a := range alts {
			if p, ok := primitive(a); ok {
				return elicitation{wrapped: true, schema: map[string]any{"type": "object",
					"properties": map[string]any{ArgAnswer: p}, "required": []string{ArgAnswer}}}
			}
		}
	}
	return elicitation{raw: true, schema: map[string]any{"type": "object",
		"properties": map[string]any{ArgAnswer: map[string]any{"type": "string", "title": "Answer", "description": "your answer (JSON or text)"}},
		"required":   []string{ArgAnswer}}}
}

// flatObject returns s as an elicitation schema when it is an object
// whose required properties are all primitive (others are dropped).
func flatObject(s map[string]any) (map[string]any, bool) {
	if s["type"] != "object" {
		return nil, false
	}
	props, _ := s["properties"].(map[string]any)
	var required []string
	if list, ok := s["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok {
				required = append(required, name)
			}
		}
	}
	out := map[string]any{}
	for name, v := range props {
		ps, _ := v.(map[string]any)
		p, ok := primitive(ps)
		switch {
		case ok:
			out[name] = p
		case slices.Contains(required, name):
			return nil, false
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	obj := map[string]any{"type": "object", "properties": out}
	if len(required) > 0 {
		obj["required"] = required
	}
	return obj, true
}

// elicitKeywords are the keywords elicitation schemas keep.
var elicitKeywords = []string{"type", "title", "description", "enum", "default", "minimum", "maximum", "minLength", "maxLength"}

// elicitFormats are the string formats elicitation allows.
var elicitFormats = []string{"email", "uri", "date", "date-time"}

// primitive returns s reduced to what elicitation allows, when s is a
// string (with an enum of strings or not), number, integer or boolean.
func primitive(s map[string]any) (map[string]any, bool) {
	t, _ := s["type"].(string)
	if t == "" {
		if enum, ok := s["enum"].([]any); ok && allStrings(enum) {
			t = "string"
		}
	}
	switch t {
	case "string", "number", "integer", "boolean":
	default:
		return nil, false
	}
	out := map[string]any{"type": t}
	for _, k := range elicitKeywords[1:] {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	if enum, ok := out["enum"].([]any); ok && (t != "string" || !allStrings(enum)) {
		return nil, false
	}
	if f, ok := s["format"].(string); ok && t == "string" && slices.Contains(elicitFormats, f) {
		out["format"] = f
	}
	return out, true
}

func allStrings(list []any) bool {
	for _, v := range list {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}
