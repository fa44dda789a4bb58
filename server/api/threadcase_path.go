package api

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/internal/transcript"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// maxCaseHistory bounds the checkpoints read for a recorded case's node
// path (a thread's newest ones; an older start is left out).
const maxCaseHistory = 1000

// nodePath is the root graph's node path, one entry per task in step
// order, from the thread's checkpoints: the tasks a checkpoint planned
// (Next) ran when the following checkpoint has a later step. It is what
// eval.ServerTarget reads from the history route, so a recorded case
// expects the path its replay reports.
func nodePath(ctx context.Context, g *graph.Graph, opts []graph.RunOption) ([]string, error) {
	var hist []*graph.Snapshot // newest first
	for s, err := range g.History(ctx, checkpoint.ListOptions{Limit: maxCaseHistory}, opts...) {
		if err != nil {
			return nil, err
		}
		hist = append(hist, s)
	}
	var out []string
	for i := len(hist) - 1; i > 0; i-- {
		if hist[i-1].Metadata.Step > hist[i].Metadata.Step {
			out = append(out, hist[i].Next...)
		}
	}
	return out, nil
}

// caseTrajectory is the agent's own tool calls in the order they were
// made, from the transcript: the calls of the state's assistant messages
// and the calls a planner (agent/planexec) made inside its plan steps.
// A step's loop runs in a nested graph whose messages are not in the
// state; the planner reports each of its calls and results as events,
// which are read here.
//
// ADK's rule — the trajectory is the agent's own calls, not a sub-agent's
// inner ones — decides which events count: a plan step is the planner
// itself acting on its plan (its tools, its model, its approvals), so
// its calls are the agent's; a planner that runs as a node of another
// graph is a sub-agent, and its events (from a namespace more than one
// level down, "outer:task|step:task") are left out. Calls of a task run
// without a plan are in the messages already and their events (no step)
// are skipped; a call asked again after an approval counts once.
func caseTrajectory(turns []transcript.Turn) []eval.ToolCall {
	var msgs []llm.Message
	called := map[string]bool{}
	for i, t := range turns {
		switch t.Kind {
		case transcript.KindMessage:
			if m, err := lcmsg.ToLLM(t.Message); err == nil {
				msgs = append(msgs, m)
			}
		case transcript.KindEvent:
			if strings.Contains(t.Namespace, "|") {
				continue
			}
			var ev planexec.Event
			if json.Unmarshal(t.Data, &ev) != nil || ev.StepID == "" || ev.Tool == nil {
				continue
			}
			id := "step/" + ev.Tool.CallID
			if ev.Tool.CallID == "" {
				id += strconv.Itoa(i)
			}
			call := llm.ToolCall{ID: id, Name: ev.Tool.Name, Arguments: string(ev.Tool.Arguments)}
			switch ev.Kind {
			case planexec.EventToolCall:
				if !called[id] {
					called[id] = true
					msgs = append(msgs, llm.Assistant("", call))
				}
			case planexec.EventToolResult:
				if ev.Tool.IsError {
					msgs = append(msgs, llm.ToolError(call, ev.Tool.Result))
				} else {
					msgs = append(msgs, llm.ToolResult(call, ev.Tool.Result))
				}
			}
		}
	}
	return eval.Trajectory(msgs)
}
