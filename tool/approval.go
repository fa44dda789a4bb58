package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/answer"
	"github.com/trellis-agents/trellis/llm"
)

// Rule says whether one tool's calls need a person's approval. Make one
// with RequireApproval, AutoApprove or ApproveIf; the zero Rule requires
// approval.
type Rule struct {
	auto bool
	pred func(args json.RawMessage) bool
}

// RequireApproval asks a person before every call of the tool.
func RequireApproval() Rule { return Rule{} }

// AutoApprove runs every call of the tool without asking.
func AutoApprove() Rule { return Rule{auto: true} }

// ApproveIf runs a call without asking when pred returns true for its
// arguments (validated JSON), and asks a person otherwise. A nil pred, or
// one that panics, asks.
func ApproveIf(pred func(args json.RawMessage) bool) Rule { return Rule{pred: pred} }

// Policy maps tool names to approval rules. A tool the policy does not name
// is approved by its kind: read tools (Info.ReadOnly) run at once, and every
// other tool asks a person — the policy fails closed. A rule always wins
// over the kind, so a policy may also put a read tool under approval.
type Policy map[string]Rule

// NeedsApproval reports whether a call of the tool described by info, with
// these (validated) arguments, must wait for a person.
func (p Policy) NeedsApproval(info Info, args json.RawMessage) bool {
	r, ok := p[info.Name]
	if !ok {
		return !info.ReadOnly
	}
	return !r.approves(args)
}

// runsAtOnce reports whether every call of the tool runs without asking,
// whatever its arguments.
func (p Policy) runsAtOnce(info Info) bool {
	r, ok := p[info.Name]
	if !ok {
		return info.ReadOnly
	}
	return r.auto
}

func (r Rule) approves(args json.RawMessage) (ok bool) {
	switch {
	case r.auto:
		return true
	case r.pred == nil:
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false // fail closed
		}
	}()
	return r.pred(args)
}

// ApprovalKind is the Kind of every ApprovalRequest, so code reading a run's
// interrupts can tell tool approvals from other questions.
const ApprovalKind = "tool_approval"

// ApprovalRequest is the payload of the interrupt a write call raises while
// it waits for a person (graph.InterruptInfo.Payload, as JSON). Answer it
// with a Decision, by the interrupt's ID (graph.WithResumeMap) or, when it
// is the only one waiting, with graph.WithResume.
type ApprovalRequest struct {
	// Kind is ApprovalKind.
	Kind   string `json:"kind"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Arguments are the model's arguments, already checked against the
	// tool's schema.
	Arguments json.RawMessage `json:"arguments"`
	// Summary describes the call in a sentence (see Summarizer).
	Summary string `json:"summary"`
	// Parameters is the tool's JSON schema for its arguments (nil when it
	// takes none), so a client can offer an edit of the arguments and check
	// it before answering with ActionEdit.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// ReadOnly is true for a read tool that a policy put under approval;
	// false (the usual case) means the call may change something outside
	// the run.
	ReadOnly bool `json:"read_only,omitempty"`
	// Problem, when set, says why the person is asked again: the previous
	// answer edited the arguments into ones the tool cannot use, or was not
	// a known action.
	Problem string `json:"problem,omitempty"`

	// ActionRequests and ReviewConfigs describe the same call in the shape
	// of LangChain's human-in-the-loop middleware, so LangChain front ends
	// (Agent Chat UI and others reading HITLRequest) render their
	// approve/edit/reject view for it: one action request (the call) and
	// its review config. Answer with {"decisions": [one decision]} — see
	// Decision.
	ActionRequests []ActionRequest `json:"action_requests"`
	ReviewConfigs  []ReviewConfig  `json:"review_configs"`
}

// ApprovalFrom decodes the approval request an interrupt carries. It
// reports false for interrupts that are not tool approvals.
func ApprovalFrom(in graph.InterruptInfo) (ApprovalRequest, bool) {
	var r ApprovalRequest
	if json.Unmarshal(in.Payload, &r) != nil || r.Kind != ApprovalKind {
		return ApprovalRequest{}, false
	}
	return r, true
}

// Action is what a person decided about a call.
type Action string

// The actions a Decision can carry.
const (
	// ActionApprove runs the call with the model's arguments.
	ActionApprove Action = "approve"
	// ActionEdit runs the call with the Decision's arguments instead. They
	// are checked against the tool's schema first; arguments the tool
	// cannot use make the node ask again, with the problem.
	ActionEdit Action = "edit"
	// ActionReject does not run the call. The model receives a tool error
	// message saying so, with the Decision's message.
	ActionReject Action = "reject"
)

// Decision answers an ApprovalRequest. Build one with Approve, Edit or
// Reject; it crosses processes as JSON.
type Decision struct {
	Action Action `json:"action"`
	// Arguments are the replacement arguments, for ActionEdit.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Message, for ActionReject, tells the model why.
	Message string `json:"message,omitempty"`
	// Tool, for ActionEdit, is the tool the edit names (LangChain's
	// edited_action.name), when it names one. It must be the call's own:
	// an edit changes the arguments, never the tool.
	Tool string `json:"tool,omitempty"`
}

// decisionSchema is the JSON Schema of a Decision, which approval
// interrupts carry (graph.InterruptInfo.Schema). A test checks it is not
// nil.
var decisionSchema = sync.OnceValue(func() json.RawMessage {
	obj, _ := llm.SchemaFor[decisionObject]()
	return answer.AnyOf(answer.ConfirmSchema(), obj)
})

// decisionObject is a Decision's object form, for its schema.
type decisionObject Decision

// UnmarshalJSON reads a Decision as a person may give it: the object form
// {"action", "arguments", "message"}, LangChain's human-in-the-loop
// resume {"decisions": [{"type": "approve"|"edit"|"reject", ...}]} (one
// decision: each approval request has one action request), or a plain
// confirmation — true, "approve", "accept", "是", "确认" approve; false,
// "reject", "否", "拒绝" reject. Any other text is an error saying what
// fits.
func (d *Decision) UnmarshalJSON(b []byte) error {
	if hd, ok, err := decodeHITL(b); ok {
		if err != nil {
			return err
		}
		*d = hd
		return nil
	}
	if yes, ok := answer.Confirm(b); ok {
		if yes {
			*d = Approve()
		} else {
			*d = Reject("")
		}
		return nil
	}
	if s, ok := answer.String(b); ok {
		return fmt.Errorf("tool: %q is not a decision: answer true or false (approve/reject, 是/否), or {\"action\": \"approve\"|\"edit\"|\"reject\", \"arguments\": {...}, \"message\": \"...\"}", s)
	}
	var o decisionObject
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("tool: a decision is true, false or an object {action, arguments, message}: %w", err)
	}
	*d = Decision(o)
	return nil
}

// Approve returns a decision to run the call as the model wrote it.
func Approve() Decision { return Decision{Action: ActionApprove} }

// Edit returns a decision to run the call with args (a JSON object)
// instead of the model's arguments. The model is told the arguments were
// changed.
func Edit(args json.RawMessage) Decision { return Decision{Action: ActionEdit, Arguments: args} }

// Reject returns a decision not to run the call; message (may be empty)
// tells the model why.
func Reject(message string) Decision { return Decision{Action: ActionReject, Message: message} }

// String formats the decision for logs.
func (d Decision) String() string {
	switch d.Action {
	case ActionEdit:
		return fmt.Sprintf("edit %s", d.Arguments)
	case ActionReject:
		return fmt.Sprintf("reject %q", d.Message)
	}
	return string(d.Action)
}

// Outcome records how a call got past approval.
type Outcome string

// Approval outcomes, as recorded in Record.Approval.
const (
	// OutcomeNotNeeded: the call ran without asking (a read tool, or the
	// policy approved it), or never got as far as approval (an unknown tool
	// or bad arguments).
	OutcomeNotNeeded Outcome = "not_needed"
	OutcomeApproved  Outcome = "approved"
	OutcomeEdited    Outcome = "edited"
	OutcomeRejected  Outcome = "rejected"
)

// CheckTools reports the rules of p that name none of tools (nil tools
// are skipped), so a misspelt tool name in a policy is found when an agent
// is built rather than never applied.
func (p Policy) CheckTools(tools []Tool) error {
	known := map[string]bool{}
	var names []string
	for _, t := range tools {
		if t == nil {
			continue
		}
		name := t.Info().Name
		if !known[name] {
			names = append(names, name)
		}
		known[name] = true
	}
	slices.Sort(names)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p)) {
		if !known[name] {
			errs = append(errs, fmt.Errorf("the policy has a rule for %q, which is not one of the tools (%s)", name, strings.Join(names, ", ")))
		}
	}
	return errors.Join(errs...)
}

// RunsAtOnce reports whether every call of the tool described by info runs
// without asking, whatever its arguments, so an approval step can skip
// checking them.
func (p Policy) RunsAtOnce(info Info) bool { return p.runsAtOnce(info) }

// NewApprovalRequest returns the request that asks a person about call,
// whose arguments args were checked against the tool described by info;
// summary describes the call in a sentence.
func NewApprovalRequest(call llm.ToolCall, info Info, args json.RawMessage, summary string) ApprovalRequest {
	return ApprovalRequest{
		Kind:      ApprovalKind,
		CallID:    call.ID,
		Tool:      call.Name,
		Arguments: args,
		Summary:   summary,
		// The schema and kind let a client offer (and check) an edit.
		Parameters: info.Parameters,
		ReadOnly:   info.ReadOnly,
	}
}

// AskApproval asks a person about the call req describes, with a
// graph.Interrupt, until the answer is usable: an edit that names another
// tool, edited arguments that check rejects, or an unknown action ask
// again with the problem (a new interrupt). It returns the decision and
// the arguments to run with (the edited ones, normalized by check, for
// ActionEdit). Its error is the interrupt's: return it as it is so the run
// stops and waits. It is the protocol of the approval middleware
// (middleware.Approval); call it from your own node to ask the same way.
func AskApproval(ctx context.Context, req ApprovalRequest, check func(args json.RawMessage) (json.RawMessage, error)) (Decision, json.RawMessage, error) {
	schema := approvalSchema(req.Tool)
	args := req.Arguments
	for {
		req.withHITL()
		d, err := graph.Interrupt[Decision](ctx, req, graph.ExpectAnswer(schema))
		if err != nil {
			return Decision{}, nil, err
		}
		switch d.Action {
		case ActionApprove, ActionReject:
			return d, args, nil
		case ActionEdit:
			if d.Tool != "" && d.Tool != req.Tool {
				req.Problem = fmt.Sprintf("The edit names the tool %q, but this call is of %q: an edit changes only the arguments. Approve, reject, or edit again.", d.Tool, req.Tool)
				continue
			}
			edited := normalizeArgs(d.Arguments)
			if check != nil {
				checked, err := check(edited)
				if err != nil {
					req.Problem = fmt.Sprintf("The edited arguments cannot be used: %v. Approve, reject, or edit again.", argProblem(err))
					continue
				}
				edited = checked
			}
			return d, edited, nil
		default:
			req.Problem = fmt.Sprintf("The answer's action %q is not one of %q, %q or %q.", d.Action, ActionApprove, ActionEdit, ActionReject)
		}
	}
}
