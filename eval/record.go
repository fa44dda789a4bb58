package eval

import (
	"encoding/json"

	"github.com/trellis-agents/trellis/llm"
)

// Record turns a thread into a case to edit: its first user message is the
// input; the interrupts it met with the answers they got become Answers
// (matched by the payload's kind when it has one, else by order); every
// later user message is a Turn (answers of interrupts met after the first
// turn stay with the input's, in order, since a thread does not say which
// turn asked); and what the agent did becomes the expectations: the
// final response as Output, the agent's tool calls (name and arguments)
// as ToolCalls, and the node path as Nodes. The case's ID is the thread's;
// give it a meaningful one.
func Record(th *Thread) Case {
	c := Case{ID: th.ThreadID, Metadata: map[string]any{"recorded_from": th.ThreadID}}
	users := 0
	for _, m := range th.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		if users == 0 {
			c.Input.Message = m.Text()
		} else {
			c.Turns = append(c.Turns, Turn{Message: m.Text()})
		}
		users++
	}
	if users == 0 && len(th.State) > 0 {
		// Not a chat: keep the state the thread ended with as the
		// reference and leave the input for the person to fill in.
		c.Input.State = json.RawMessage(`{}`)
	}
	for _, in := range th.Interrupts {
		if len(in.Answer) == 0 {
			continue
		}
		a := Answer{Kind: in.Kind, Value: in.Answer}
		c.Answers = append(c.Answers, a)
	}
	if out := th.FinalResponse(); out != "" {
		b, _ := json.Marshal(out)
		c.Expect.Output = b
	} else if len(th.State) > 0 {
		b, _ := json.Marshal(th.State)
		c.Expect.Output = b
	}
	calls := th.ToolCalls
	if calls == nil {
		calls = Trajectory(th.Messages)
	}
	for _, tc := range calls {
		c.Expect.ToolCalls = append(c.Expect.ToolCalls, ToolCall{Name: tc.Name, Args: tc.Args})
	}
	c.Expect.Nodes = th.Nodes
	return c
}
