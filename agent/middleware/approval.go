package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

// ApprovalName is the name of the middleware Approval returns. An agent
// that finds a middleware of this name in its chain uses it where it is
// instead of adding its own innermost.
const ApprovalName = "approval"

// Approval returns the middleware that asks a person before a tool call
// runs, when policy says so (tool.Policy: a tool it does not name asks
// unless it is a read tool, so the policy fails closed). It is the one
// implementation of tool approval in Trellis: every agent runs its tool
// calls through it.
//
// A call that needs approval raises a graph.Interrupt whose payload is a
// tool.ApprovalRequest (kind "tool_approval", LangChain's HITL fields
// included) inside the call's own task, so it works at every depth
// (subgraphs, sub-agents) and in every durability mode, and the calls of
// one reply that need approval wait together, one interrupt each,
// answered by interrupt ID. The answer is a tool.Decision: approve runs
// the call; edit runs it with the person's arguments, checked against the
// tool first (arguments it cannot use, or an unknown action, ask again
// with the problem), and the model is told they changed; reject answers
// the model with a tool error and the call is recorded as rejected, not
// done.
//
// The tools' kinds, schemas and summaries come from ToolCall.Tools. A
// call of a tool the catalog does not know, or with arguments the tool
// cannot use, goes to next without asking: the tool node answers it with
// the error the model needs. Without a catalog every call that the policy
// does not approve asks, unchecked.
//
// Agents put Approval innermost, after the caller's middleware, unless
// the caller's chain has one (ApprovalName): a tool limit or a refusal
// answers before anyone is asked, and the person sees the arguments as
// the chain will run them (redacted by PII middleware, say).
func Approval(policy tool.Policy) Middleware {
	return approval{policy: maps.Clone(policy)}
}

type approval struct{ policy tool.Policy }

func (approval) Name() string { return ApprovalName }

// Policy returns the rules, for an agent to check they name its tools.
func (a approval) Policy() tool.Policy { return a.policy }

// WrapTool asks a person when the policy says so, then runs, edits or
// rejects the call.
func (a approval) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (*ToolResult, error) {
	c := call.Call
	info := tool.Info{Name: c.Name}
	cat := call.Tools
	if cat != nil {
		var ok bool
		if info, ok = cat.Lookup(c.Name); !ok {
			return next(ctx, call) // the node says the tool is unknown
		}
		if a.policy.RunsAtOnce(info) {
			return next(ctx, call)
		}
	}
	args := json.RawMessage(c.Arguments)
	if cat != nil {
		var err error
		if args, err = cat.CheckArguments(c.Name, args); err != nil {
			return next(ctx, call) // the node answers with the problem
		}
	}
	if !a.policy.NeedsApproval(info, args) {
		return next(ctx, call)
	}
	check := func(args json.RawMessage) (json.RawMessage, error) { return args, nil }
	summary := fmt.Sprintf("Call %s with %s", c.Name, args)
	if cat != nil {
		check = func(args json.RawMessage) (json.RawMessage, error) { return cat.CheckArguments(c.Name, args) }
		summary = cat.Summarize(c.Name, args)
	}
	d, run, err := tool.AskApproval(ctx, tool.NewApprovalRequest(c, info, args, summary), check)
	if err != nil {
		return nil, err
	}
	switch d.Action {
	case tool.ActionReject:
		text := "A person rejected this call, so it was not run."
		problem := "rejected by a person"
		if d.Message != "" {
			text += " Their message: " + d.Message
			problem += ": " + d.Message
		}
		res := Refuse(c, text, problem)
		res.Approval = tool.OutcomeRejected
		return res, nil
	case tool.ActionEdit:
		edited := *call
		edited.Call.Arguments = string(run)
		res, err := next(ctx, &edited)
		if err != nil || res == nil {
			return res, err
		}
		out := *res
		out.Approval, out.EditedArguments = tool.OutcomeEdited, string(run)
		if !out.Message.IsError {
			out.Message = noteEdit(out.Message, run)
		}
		return &out, nil
	}
	res, err := next(ctx, call)
	if err != nil || res == nil {
		return res, err
	}
	out := *res
	out.Approval = tool.OutcomeApproved
	return &out, nil
}

// noteEdit tells the model, ahead of the result, that a person changed
// the call's arguments.
func noteEdit(m llm.Message, args json.RawMessage) llm.Message {
	note := fmt.Sprintf("Note: a person changed the arguments of this call before it ran; it ran with %s.\n\n", args)
	parts := make([]llm.Part, 0, len(m.Parts)+1)
	parts = append(parts, llm.Text(note))
	for i, p := range m.Parts {
		if i == 0 && p.Type == llm.PartText {
			parts[0] = llm.Text(note + p.Text)
			continue
		}
		parts = append(parts, p)
	}
	m.Parts = parts
	return m
}

// ApprovalOf returns the approval middleware an agent adds innermost to
// its chain: Approval(policy), or nothing when mws (the caller's chain)
// already has one (ApprovalName), which then applies where it stands. A
// policy given with an approval middleware of the caller's is an error:
// one of them would be ignored.
func ApprovalOf(policy tool.Policy, mws []Middleware) ([]Middleware, error) {
	for _, m := range mws {
		if m != nil && m.Name() == ApprovalName {
			if policy != nil {
				return nil, fmt.Errorf("Config.Policy is set and Config.Middleware has an approval middleware; give the policy to middleware.Approval and leave Config.Policy nil")
			}
			return nil, nil
		}
	}
	return []Middleware{Approval(policy)}, nil
}

// CheckPolicy reports rules of the chain's approval policy that name
// none of tools: a misspelt name would never apply.
func CheckPolicy(c *Chain, tools []tool.Tool) error {
	for _, m := range c.Middleware() {
		if a, ok := m.(approval); ok {
			return a.policy.CheckTools(tools)
		}
	}
	return nil
}
