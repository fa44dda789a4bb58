package graph

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// EventKind is a kind of stream event. Kinds are bits: WithEvents takes
// several, and a run computes nothing for a kind nobody asked for.
type EventKind uint16

// Event kinds.
const (
	// EventValues carries the whole state after the input is applied
	// (step 0) and after every step.
	EventValues EventKind = 1 << iota
	// EventUpdates carries one task's writes after its step commits, in
	// task order.
	EventUpdates
	// EventCustom carries a value a node passed to Emit.
	EventCustom
	// EventMessages carries a piece of model output written through
	// Messages: answer text, reasoning text or tool-call text, marked apart.
	EventMessages
	// EventTaskStart and EventTaskEnd bracket each task; EventTaskEnd
	// carries its duration and error.
	EventTaskStart
	EventTaskEnd
	// EventCheckpoint follows each checkpoint the run saves.
	EventCheckpoint
	// EventInterrupt carries the interrupts that stopped the run.
	EventInterrupt
	// EventDebug carries engine detail: the tasks each step plans.
	EventDebug

	// EventTasks is both task kinds.
	EventTasks = EventTaskStart | EventTaskEnd
	// EventAll is every kind.
	EventAll EventKind = 1<<iota - 1
	// DefaultEvents is what Stream sends unless WithEvents says otherwise:
	// everything but debug.
	DefaultEvents = EventAll &^ EventDebug
)

var kindNames = []string{"values", "updates", "custom", "messages", "task-start", "task-end", "checkpoint", "interrupt", "debug"}

// String names the kinds in k, joined by "|".
func (k EventKind) String() string {
	var parts []string
	for i, n := range kindNames {
		if k&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Event is one item of a run's stream. Step, Node, TaskID and Namespace say
// where it came from; the field that matches Kind holds its payload.
type Event struct {
	Kind EventKind
	// Step is the superstep (0 is the input).
	Step int
	// Node and TaskID name the task; empty for run-level events.
	Node   string
	TaskID string
	// Namespace is "" for the root graph, or the path of subgraph tasks
	// that produced the event: "node:taskID|node:taskID".
	Namespace string

	State      State           // EventValues
	Update     Update          // EventUpdates
	Custom     any             // EventCustom
	Message    MessageChunk    // EventMessages
	Task       TaskInfo        // EventTaskStart, EventTaskEnd
	Checkpoint checkpoint.Ref  // EventCheckpoint
	Interrupts []InterruptInfo // EventInterrupt
	Debug      string          // EventDebug
}

// String formats the event for logs.
func (e Event) String() string {
	where := fmt.Sprintf("step %d", e.Step)
	if e.Node != "" {
		where += " " + e.Node
	}
	if e.Namespace != "" {
		where += " [" + e.Namespace + "]"
	}
	var what string
	switch e.Kind {
	case EventValues:
		what = e.State.String()
	case EventUpdates:
		what = fmt.Sprint(e.Update)
	case EventCustom:
		what = fmt.Sprint(e.Custom)
	case EventMessages:
		what = fmt.Sprintf("%s %q", e.Message.Part, e.Message.Text)
	case EventTaskEnd:
		what = e.Task.Duration.String()
		if e.Task.Err != nil {
			what += " error: " + e.Task.Err.Error()
		}
	case EventCheckpoint:
		what = e.Checkpoint.String()
	case EventDebug:
		what = e.Debug
	}
	if what == "" {
		return fmt.Sprintf("%s %s", e.Kind, where)
	}
	return fmt.Sprintf("%s %s: %s", e.Kind, where, what)
}

// MessagePart says what a message chunk is.
type MessagePart uint8

// Message parts.
const (
	PartText      MessagePart = iota // answer text
	PartReasoning                    // reasoning ("thinking") text
	PartToolCall                     // tool-call name or argument text
)

func (p MessagePart) String() string {
	switch p {
	case PartReasoning:
		return "reasoning"
	case PartToolCall:
		return "tool-call"
	}
	return "text"
}

// MessageChunk is a piece of model output streamed by a node.
type MessageChunk struct {
	// MessageID groups the chunks of one model message.
	MessageID string
	Part      MessagePart
	Text      string
	// Meta carries provider detail such as the model name or a tool-call
	// index, for UIs that want it.
	Meta map[string]string
}

// TaskInfo describes a task in task events.
type TaskInfo struct {
	// Attempt counts from 1; above 1 the task was retried (see WithRetry).
	// On EventTaskStart it is 1.
	Attempt  int
	Duration time.Duration
	Err      error
	// Usage is the task's model usage (EventTaskEnd only).
	Usage Usage
	// Triggers names the nodes whose edges, Sends or Command gotos
	// scheduled the task ("__start__" for the run's input); empty for a
	// task restored from a checkpoint (EventTaskStart only).
	Triggers []string
	// Input is the state snapshot the task reads, and Payload its Send
	// payload (nil for a task started by an edge) (EventTaskStart only).
	Input   State
	Payload any
	// Result is what the task wrote, when it finished (EventTaskEnd only).
	Result Update
	// Interrupts lists what the task is waiting for, when it stopped at an
	// Interrupt (EventTaskEnd only).
	Interrupts []InterruptInfo
	// Cached reports that the task did not run: its result came from the
	// node cache (see CachePolicy) (EventTaskEnd only).
	Cached bool
}

// InterruptInfo describes an interrupt waiting for an answer.
type InterruptInfo struct {
	// ID identifies the interrupt: for one raised by a node, its task's ID
	// and its call index ("taskID:0"); for a breakpoint, the task's ID and
	// "before" or "after". Answer it with WithResumeMap(map[string]any{ID:
	// answer}).
	ID        string `json:"id"`
	Node      string `json:"node"`
	Namespace string `json:"namespace,omitempty"`
	// Kind says what raised it: a node's Interrupt call or a breakpoint.
	Kind InterruptKind `json:"kind"`
	// Payload is what the node asked with, as JSON (nil for a breakpoint).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Schema is the JSON Schema of the answer the node expects, when it
	// gave one with ExpectAnswer (nil otherwise). Clients show it to the
	// person and may validate the answer before sending it.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// InterruptKind says what raised an interrupt.
type InterruptKind string

// Interrupt kinds.
const (
	// InterruptNode is raised by a node's Interrupt call and waits for an
	// answer the node decodes.
	InterruptNode InterruptKind = "node"
	// InterruptBefore is a static breakpoint before a node
	// (WithInterruptBefore): resuming passes it, with or without a value.
	InterruptBefore InterruptKind = "before"
	// InterruptAfter is a static breakpoint after a node
	// (WithInterruptAfter): resuming passes it, with or without a value.
	InterruptAfter InterruptKind = "after"
)

// Breakpoint reports whether the interrupt is a static breakpoint, which
// needs no answer: any resume passes it.
func (i InterruptInfo) Breakpoint() bool {
	return i.Kind == InterruptBefore || i.Kind == InterruptAfter
}

// DecodePayload decodes an interrupt's payload into a T, with an error that
// names the interrupt when it does not fit.
func DecodePayload[T any](in InterruptInfo) (T, error) {
	var v T
	if len(in.Payload) == 0 {
		return v, fmt.Errorf("graph: interrupt %s has no payload", in.ID)
	}
	if err := json.Unmarshal(in.Payload, &v); err != nil {
		return v, fmt.Errorf("graph: the payload of interrupt %s does not decode as %T: %w", in.ID, v, err)
	}
	return v, nil
}
