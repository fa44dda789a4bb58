package eval

import (
	"encoding/json"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// Thread is what an evaluator sees of a finished case: everything the
// thread stored, in a form that does not depend on the wire it came over.
type Thread struct {
	// ThreadID and CheckpointID locate the thread, so a case opens in the
	// page's timeline.
	ThreadID     string `json:"thread_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// State is the final state, key by key.
	State map[string]json.RawMessage `json:"state,omitempty"`
	// Messages is the conversation, when the graph has one.
	Messages []llm.Message `json:"messages,omitempty"`
	// ToolCalls is the trajectory of the agent's own tool calls (not its
	// sub-agents' inner calls), in order, with their results.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Nodes is the node path of the root graph, one entry per task, in step
	// order.
	Nodes []string `json:"nodes,omitempty"`
	// Interrupts are the questions the run asked, with their answers.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Turns splits the conversation by user turn (ADK's invocations).
	Turns []TurnRecord `json:"turns,omitempty"`
	// Usage sums the model calls of every run of the case.
	Usage llm.Usage `json:"usage,omitzero"`
	// Latency is the wall time of the case's runs, answers excluded.
	Latency time.Duration `json:"latency"`
	// Error is the run's error, empty when it finished.
	Error string `json:"error,omitempty"`
}

// FinalResponse is the text of the last assistant message, "" when there is
// none.
func (t *Thread) FinalResponse() string {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if t.Messages[i].Role == llm.RoleAssistant {
			if s := t.Messages[i].Text(); s != "" {
				return s
			}
		}
	}
	return ""
}

// ToolCall is one call in a trajectory.
type ToolCall struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Args are the call's arguments as JSON (an object).
	Args json.RawMessage `json:"args,omitempty"`
	// Result is the tool's result text; empty in expectations.
	Result string `json:"result,omitempty"`
	// Status is "ok", "error" (the tool failed or the arguments were
	// invalid) or "rejected" (a person declined it); empty in expectations.
	Status string `json:"status,omitempty"`
	// Reason is the person's reason for a rejection, or the error.
	Reason string `json:"reason,omitempty"`
}

// Interrupt is a question the run asked, and the answer it got.
type Interrupt struct {
	// ID is the interrupt's ID on the thread.
	ID string `json:"id"`
	// Node is the node that asked.
	Node string `json:"node,omitempty"`
	// Kind is the payload's "kind" field, when it has one.
	Kind string `json:"kind,omitempty"`
	// Question is the payload's human-readable text, when it has one.
	Question string `json:"question,omitempty"`
	// Payload is the interrupt's payload as the run raised it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Answer is the resume value sent, nil when it was never answered.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// TurnRecord is one user turn and what the agent did in it.
type TurnRecord struct {
	// User is the user's message.
	User string `json:"user"`
	// Response is the turn's final response.
	Response string `json:"response,omitempty"`
	// ToolCalls is the turn's trajectory.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}
