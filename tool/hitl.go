package tool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/internal/answer"
)

// LangChain's human-in-the-loop middleware (HumanInTheLoopMiddleware)
// interrupts with {action_requests: [{name, args, description}],
// review_configs: [{action_name, allowed_decisions}]} and is resumed with
// {decisions: [{type: "approve"} | {type: "edit", edited_action: {name,
// args}} | {type: "reject", message}]}, one decision per action request,
// in order. Trellis asks about each call in its own interrupt, so each
// ApprovalRequest carries one action request, and its resume carries one
// decision; several calls waiting at once are several interrupts, each
// answered by its ID.

// ActionRequest is one call awaiting review, in LangChain's shape.
type ActionRequest struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Args are the call's arguments (a JSON object).
	Args json.RawMessage `json:"args"`
	// Description says what the call does (the Summary, and the Problem
	// when the person is asked again).
	Description string `json:"description,omitempty"`
}

// ReviewConfig says which decisions an action request allows, in
// LangChain's shape.
type ReviewConfig struct {
	// ActionName is the tool's name.
	ActionName string `json:"action_name"`
	// AllowedDecisions are the decision types the call accepts.
	AllowedDecisions []string `json:"allowed_decisions"`
	// ArgsSchema is the tool's JSON schema for its arguments, for an edit
	// (omitted when the tool takes none).
	ArgsSchema json.RawMessage `json:"args_schema,omitempty"`
}

// allowedDecisions are the decision types every Trellis approval accepts.
var allowedDecisions = []string{string(ActionApprove), string(ActionEdit), string(ActionReject)}

// withHITL fills the request's LangChain fields from its own.
func (r *ApprovalRequest) withHITL() {
	desc := r.Summary
	if r.Problem != "" {
		desc += "\n\n" + r.Problem
	}
	args := r.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	r.ActionRequests = []ActionRequest{{Name: r.Tool, Args: args, Description: desc}}
	r.ReviewConfigs = []ReviewConfig{{ActionName: r.Tool, AllowedDecisions: allowedDecisions, ArgsSchema: r.Parameters}}
}

// hitlDecision is one decision of a LangChain resume.
type hitlDecision struct {
	Type         string `json:"type"`
	EditedAction *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"edited_action"`
	Message string `json:"message"`
}

// decodeHITL reads a LangChain resume {"decisions": [...]}. ok is false
// when b is not an object with "decisions"; err says what is wrong with
// one that is (never a silent approval).
func decodeHITL(b []byte) (d Decision, ok bool, err error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return Decision{}, false, nil
	}
	raw, has := obj["decisions"]
	if !has {
		return Decision{}, false, nil
	}
	var ds []hitlDecision
	if err := json.Unmarshal(raw, &ds); err != nil {
		return Decision{}, true, fmt.Errorf("tool: decisions must be a list of {type, edited_action, message}: %w", err)
	}
	if len(ds) != 1 {
		return Decision{}, true, fmt.Errorf("tool: this approval has 1 action request, so decisions needs exactly 1 decision, got %d", len(ds))
	}
	h := ds[0]
	switch Action(h.Type) {
	case ActionApprove:
		return Approve(), true, nil
	case ActionReject:
		return Reject(h.Message), true, nil
	case ActionEdit:
		if h.EditedAction == nil || !bytes.HasPrefix(bytes.TrimSpace(h.EditedAction.Args), []byte("{")) {
			return Decision{}, true, fmt.Errorf("tool: an edit decision needs edited_action {name, args} with args an object")
		}
		e := Edit(h.EditedAction.Args)
		e.Tool = h.EditedAction.Name
		return e, true, nil
	}
	return Decision{}, true, fmt.Errorf("tool: decision type %q is not one of %q", h.Type, allowedDecisions)
}

// approvalSchema is the JSON Schema of an answer to an approval of tool:
// a Decision's forms, and LangChain's {"decisions": [one decision]} whose
// edit may name only this tool. The server checks a resume against it,
// so a wrong count or type is refused before the run resumes.
func approvalSchema(tool string) json.RawMessage {
	typ := func(t string) map[string]any { return map[string]any{"const": t} }
	edited := map[string]any{"type": "object", "required": []string{"args"},
		"properties": map[string]any{"name": map[string]any{"const": tool}, "args": map[string]any{"type": "object"}}}
	one := map[string]any{"oneOf": []any{
		map[string]any{"type": "object", "required": []string{"type"}, "properties": map[string]any{"type": typ("approve")}},
		map[string]any{"type": "object", "required": []string{"type", "edited_action"}, "properties": map[string]any{"type": typ("edit"), "edited_action": edited}},
		map[string]any{"type": "object", "required": []string{"type"}, "properties": map[string]any{"type": typ("reject"), "message": map[string]any{"type": "string"}}},
	}}
	hitl, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"decisions"},
		"properties": map[string]any{"decisions": map[string]any{"type": "array", "minItems": 1, "maxItems": 1, "items": one}}})
	return answer.AnyOf(decisionSchema(), hitl)
}
