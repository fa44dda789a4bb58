package builder

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// DefaultJudgePrompt is the judge's system prompt unless JudgePrompt
// replaces it.
const DefaultJudgePrompt = "You decide whether a condition holds for a conversation between a user and an AI assistant " +
	"(the assistant may have worked in several roles and called tools). Read the conversation, then decide whether " +
	"the condition is true at the end of it. Reply with a JSON object only: " +
	`{"holds": true or false, "reason": "one short sentence saying why"}.`

// Judgement is one verdict of the judge on a conditional edge.
type Judgement struct {
	// Node is the LLM node whose edge was judged, after one of its
	// visits.
	Node      string `json:"node"`
	Condition string `json:"condition"`
	// To is where the edge leads (a node, or graph.END).
	To     string `json:"to"`
	Holds  bool   `json:"holds"`
	Reason string `json:"reason,omitempty"`
	// Step is the graph step of the route node that asked.
	Step int `json:"step"`
}

// Judgements holds every judgement made on a thread, in order. It is
// ordinary state: read it from Result.FinalState, a checkpoint or a
// stream's updates.
var Judgements = graph.NewKey("agent_judgements", graph.Concat[Judgement]())

// decisions holds the path key each route node chose last, by LLM node;
// the route node's conditional edge reads its own, so routing is a pure
// function of state, and parallel branches' route nodes never write the
// same value.
var decisions = graph.NewKey("agent_routes", graph.MergeMap[string, string]())

// legacyDecision is the single decision key of agents built before
// parallel branches; it stays in the schema, never written, so threads
// checkpointed then still load.
var legacyDecision = graph.NewKey[string]("agent_route")

// Path keys of a route node's conditional edge, besides one per
// condition (see pathKey). Mermaid shows them as edge labels.
const (
	pathOtherwise = "(otherwise)"
	pathLimit     = "(out of iterations)"
)

// pathKey is the path key of a condition: its text, unless that is one of
// the reserved keys.
func pathKey(condition string) string {
	if condition == pathOtherwise || condition == pathLimit {
		return "when: " + condition
	}
	return condition
}

// decided is the conditional edge of node's route node.
func decided(node string) graph.RouteFunc {
	return func(_ context.Context, s graph.State) (string, error) { return decisions.Get(s)[node], nil }
}

// router is the route node of one LLM node.
type router struct {
	agent     *Agent
	node      string
	judge     llm.Model
	policy    history.Policy // nil: the whole conversation
	system    llm.Message
	conds     []condDecl
	otherwise string            // the unconditional target, graph.END when there is none
	parallel  []string          // the nodes Parallel runs at once when no condition holds
	chain     *middleware.Chain // the judge's calls go through its model hooks
}

// verdict is the judge's reply.
type verdict struct {
	Holds  bool   `json:"holds"`
	Reason string `json:"reason,omitempty"`
}

// run judges the node's conditions in order until one holds, records the
// judgements and the decision, and ends the run when no visit is left.
func (r *router) run(ctx context.Context, s graph.State) (graph.Output, error) {
	r.agent.observe(ctx, s)
	added := r.agent.inboxFrom(ctx)
	// Another visit takes two steps: the node and its route.
	more := graph.RemainingSteps(ctx) >= 2
	key, to := pathOtherwise, r.otherwise
	var judged []Judgement
	// Out of visits, the judge is asked only when its answer can still
	// end the run, so that the run ends as it would have anyway rather
	// than by the limit.
	if len(r.conds) > 0 && (more || r.canEnd()) {
		msgs := append(slices.Clone(react.Messages.Get(s)), added...)
		if r.policy != nil {
			sel, _, err := middleware.SelectHistory(ctx, r.policy, history.History{System: []llm.Message{r.system}, Messages: msgs, Summary: react.HistorySummary.Get(s)}, nil)
			if err != nil {
				return nil, fmt.Errorf("builder: choosing the history the judge sees after node %q: %w", r.node, err)
			}
			msgs = sel.Messages
		}
		conversation := transcript(msgs)
		for _, c := range r.conds {
			v, err := r.ask(ctx, s, conversation, c.condition)
			if err != nil {
				return nil, fmt.Errorf("builder: judging the condition %q after node %q: %w", c.condition, r.node, err)
			}
			judged = append(judged, Judgement{Node: r.node, Condition: c.condition, To: c.to, Holds: v.Holds, Reason: v.Reason, Step: graph.Step(ctx)})
			if v.Holds {
				key, to = pathKey(c.condition), c.to
				break
			}
		}
	}
	if (to != graph.END || len(r.parallel) > 0 && key == pathOtherwise) && !more {
		key = pathLimit
	}
	w := graph.Writes(decisions.Set(map[string]string{r.node: key}))
	if len(judged) > 0 {
		w = append(w, graph.Append(Judgements, judged...))
	}
	if len(added) > 0 {
		w = append(w, react.Messages.Set(added))
	}
	return w, nil
}

// canEnd reports whether some outcome of the judgement ends the run.
func (r *router) canEnd() bool {
	if r.otherwise == graph.END {
		return true
	}
	for _, c := range r.conds {
		if c.to == graph.END {
			return true
		}
	}
	return false
}

// ask asks the judge whether condition holds for the conversation,
// through the model hooks of the agent's middleware
// (middleware.GenerateJSON): they see the judge's request and its reply,
// and the verdict is read from the reply they return.
func (r *router) ask(ctx context.Context, s graph.State, conversation, condition string) (verdict, error) {
	req := &llm.Request{Messages: []llm.Message{
		r.system,
		llm.User("Conversation:\n\n" + conversation + "\n\nCondition: " + condition +
			"\n\nDoes the condition hold at the end of the conversation? Reply with the JSON object only."),
	}}
	res, err := middleware.GenerateJSON[verdict](ctx, r.chain, &middleware.ModelCall{Request: req, Model: r.judge, State: s})
	if err != nil {
		return verdict{}, err
	}
	return res.Value, nil
}

// transcript renders a conversation as text for the judge: one paragraph
// per message, long tool results cut as the nodes' requests cut them. Text
// rather than the messages themselves keeps the judge's request valid for
// every provider (tool calls without tool definitions, a history ending
// with an assistant message).
func transcript(msgs []llm.Message) string {
	if len(msgs) == 0 {
		return "(empty)"
	}
	var b strings.Builder
	for i, m := range tool.ForModel(msgs, tool.Limit{}) {
		if i > 0 {
			b.WriteString("\n\n")
		}
		switch m.Role {
		case llm.RoleUser:
			b.WriteString("User: " + m.Text())
		case llm.RoleSystem:
			b.WriteString("System: " + m.Text())
		case llm.RoleTool:
			verb := "returned"
			if m.IsError {
				verb = "failed"
			}
			fmt.Fprintf(&b, "Tool %s %s: %s", m.ToolName, verb, m.Text())
		default:
			text := m.Text()
			if text != "" || len(m.ToolCalls) == 0 {
				b.WriteString("Assistant: " + text)
			}
			for j, c := range m.ToolCalls {
				if j > 0 || text != "" {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "Assistant called tool %s with %s", c.Name, c.Arguments)
			}
		}
	}
	return b.String()
}
