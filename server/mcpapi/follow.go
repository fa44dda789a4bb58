package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/lcmsg"
	"github.com/trellis-agents/trellis/server/runs"
)

// outcome is what a run produced, as a call reports it.
type outcome struct {
	answer  string
	runErr  string
	waiting []pending
}

// follow reads the run's event log until the run ends, sending progress
// notifications when the client asked for them, and returns the answer
// and what the thread waits on.
func (h *Handler) follow(ctx context.Context, c *call, run db.Run) (outcome, error) {
	var out outcome
	var answer []string
	_, err := runs.Follow(ctx, h.DB, h.Runs.Broker(), c.tenant, run.ThreadID, run.ID, 0, 0, func(ev db.Event) error {
		mode, ns, _ := strings.Cut(ev.Event, "|")
		switch mode {
		case runs.ModeUpdates:
			answer = append(answer, c.updates(ctx, ns, ev.Data)...)
		case runs.ModeCustom:
			c.progress(ctx, inGraph(ns, customText(ev.Data)))
		case "error":
			var e struct {
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(ev.Data, &e)
			out.runErr = strings.Trim(strings.TrimSpace(e.Error+": "+e.Message), ": ")
		}
		return nil
	})
	if err != nil {
		return outcome{}, err
	}
	done, err := h.DB.GetRun(ctx, c.tenant, run.ThreadID, run.ID)
	if err != nil {
		return outcome{}, err
	}
	if (done.Status == db.RunError || done.Status == db.RunTimeout) && out.runErr == "" {
		out.runErr = cmpOr(done.Error, string(done.Status))
	}
	th, err := h.DB.GetThread(ctx, c.tenant, run.ThreadID)
	if err != nil {
		return outcome{}, err
	}
	if th.Status == db.ThreadInterrupted {
		out.waiting = pendingFrom(th.Interrupts)
	}
	out.answer = strings.Join(answer, "\n\n")
	return out, nil
}

// updates reads one updates event: a progress notification per node that
// finished, and the text of the AI messages written to the top-level
// messages (the answer).
func (c *call) updates(ctx context.Context, ns string, data json.RawMessage) []string {
	var byNode map[string]json.RawMessage
	if json.Unmarshal(data, &byNode) != nil {
		return nil
	}
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var texts []string
	for _, n := range nodes {
		if n == "__interrupt__" {
			c.progress(ctx, inGraph(ns, "waiting for a person"))
			continue
		}
		c.progress(ctx, inGraph(ns, "step "+n+" done"))
		if ns != "" {
			continue // a subgraph's messages are not the answer
		}
		var u struct {
			Messages []struct {
				Type    string          `json:"type"`
				Name    string          `json:"name"` // an internal voice's (a reviewer's): not the answer
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(byNode[n], &u) != nil {
			continue
		}
		for _, m := range u.Messages {
			if m.Type != "ai" && m.Type != "AIMessageChunk" || m.Name != "" {
				continue
			}
			if t := strings.TrimSpace(lcmsg.Text(m.Content)); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return texts
}

// progress sends one progress notification, when the client sent a
// progress token. A failed send is ignored: progress is advisory.
func (c *call) progress(ctx context.Context, msg string) {
	if c.token == nil || c.session == nil {
		return
	}
	c.sent++
	_ = c.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: c.sent, Message: msg})
}

// inGraph prefixes msg with the subgraph path of namespace ns ("" at the
// top level): "research › step search done".
func inGraph(ns, msg string) string {
	if ns == "" {
		return msg
	}
	var path []string
	for part := range strings.SplitSeq(ns, "|") {
		name, _, _ := strings.Cut(part, ":")
		path = append(path, name)
	}
	return strings.Join(path, " › ") + " › " + msg
}

// customText describes a custom event: the plan-and-execute agent's
// events as sentences, any other as its JSON.
func customText(data json.RawMessage) string {
	var e planexec.Event
	if json.Unmarshal(data, &e) != nil || e.Kind == "" {
		return compact(data)
	}
	switch e.Kind {
	case planexec.EventPlanReady:
		return fmt.Sprintf("plan ready: %d steps", stepsOf(e.Plan))
	case planexec.EventReplanned:
		return fmt.Sprintf("plan revised: %d steps", stepsOf(e.Plan))
	case planexec.EventStepStarted:
		return fmt.Sprintf("step %s started: %s", e.StepID, e.Title)
	case planexec.EventStepFinished:
		return fmt.Sprintf("step %s finished", e.StepID)
	case planexec.EventStepFailed:
		return fmt.Sprintf("step %s failed: %s", e.StepID, e.Error)
	case planexec.EventStepSkipped:
		return fmt.Sprintf("step %s skipped: %s", e.StepID, e.Error)
	case planexec.EventWaiting:
		return "waiting for a person"
	case planexec.EventDelivered:
		return "answer delivered"
	case planexec.EventToolCall:
		if e.Tool != nil {
			return fmt.Sprintf("calling %s %s", e.Tool.Name, compact(e.Tool.Arguments))
		}
	case planexec.EventToolResult:
		if e.Tool != nil {
			if e.Tool.IsError {
				return fmt.Sprintf("%s failed: %s", e.Tool.Name, short(e.Tool.Result))
			}
			return fmt.Sprintf("%s returned: %s", e.Tool.Name, short(e.Tool.Result))
		}
	}
	return compact(data)
}

func stepsOf(p *planexec.Plan) int {
	if p == nil {
		return 0
	}
	return len(p.Steps)
}

func compact(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func short(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
