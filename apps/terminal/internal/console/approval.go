package console

import (
	"encoding/json"
	"fmt"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// ToolApproval answers tool approval requests (tool.ApprovalRequest): it
// shows the call and asks to approve (y), reject with a reason (n) or edit
// the arguments (e).
func ToolApproval(p *Prompter, in graph.InterruptInfo) (any, bool, error) {
	req, ok := tool.ApprovalFrom(in)
	if !ok {
		return nil, false, nil
	}
	fmt.Fprintf(p.Out, "\nApproval needed: %s\n  tool %s, call %s\n  arguments %s\n", req.Summary, req.Tool, req.CallID, req.Arguments)
	if req.Problem != "" {
		fmt.Fprintf(p.Out, "  (asked again: %s)\n", req.Problem)
	}
	for {
		line, err := p.Line("Approve? y = yes, n = no, e = edit the arguments > ")
		if err != nil {
			return nil, true, err
		}
		switch line {
		case "y", "yes":
			return tool.Approve(), true, nil
		case "n", "no":
			reason, err := p.Line("Why not (the agent sees this)? > ")
			if err != nil {
				return nil, true, err
			}
			return tool.Reject(reason), true, nil
		case "e", "edit":
			args, err := p.Line("New arguments as one JSON object > ")
			if err != nil {
				return nil, true, err
			}
			if !json.Valid([]byte(args)) {
				fmt.Fprintln(p.Out, "That is not valid JSON; try again.")
				continue
			}
			return tool.Edit(json.RawMessage(args)), true, nil
		default:
			fmt.Fprintln(p.Out, "Please answer y, n or e (q quits and keeps the thread).")
		}
	}
}
