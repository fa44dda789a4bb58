package aguiapi

import "encoding/json"

// RunAgentInput is AG-UI's request to run an agent (protocol 1.0).
type RunAgentInput struct {
	// ThreadID is the conversation's thread, chosen by the client; the
	// thread is created on first use.
	ThreadID string `json:"threadId"`
	// RunID is the client's name for this run; events carry it.
	RunID           string `json:"runId"`
	ParentRunID     string `json:"parentRunId,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// State is the client's copy of the state; Trellis's state is the
	// thread's, and this is not written to it (docs/agui.md).
	State json.RawMessage `json:"state,omitempty"`
	// Messages is the whole conversation; only what the thread has not
	// seen is appended.
	Messages []Message `json:"messages"`
	// Tools are frontend tools: the agent may call them, and the run
	// stops for the client to answer with tool messages.
	Tools []Tool `json:"tools,omitempty"`
	// Context is ambient information for the run: it travels in the run
	// context (tool.ClientContextKey), and agents built on agent/react
	// show it to their model as a system note after their own prompt.
	Context []ContextEntry `json:"context,omitempty"`
	// ForwardedProps may set the run's config.configurable
	// ({"configurable": {...}}) and answer the one waiting interrupt
	// ({"command": {"resume": value}}); other members are ignored.
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
	// Resume answers the interrupts the thread waits on.
	Resume []ResumeEntry `json:"resume,omitempty"`
}

// Message is one AG-UI message. Content is a string or a list of parts
// (text parts are read).
type Message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Error      string          `json:"error,omitempty"`
	// ActivityType is an activity message's type (role "activity"; its
	// Content is an object).
	ActivityType string `json:"activityType,omitempty"`
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's name and arguments (JSON text).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a frontend tool the client offers.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ContextEntry is a piece of ambient information for the run.
type ContextEntry struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ResumeEntry answers one interrupt.
type ResumeEntry struct {
	InterruptID string `json:"interruptId"`
	// Status is "resolved" (Payload is the answer) or "cancelled".
	Status  string          `json:"status"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Event is one AG-UI event as sent on the stream: Type and the members of
// that type (see the protocol's event schemas); members a type does not
// have are left out.
type Event struct {
	Type            string `json:"type"`
	ThreadID        string `json:"threadId,omitempty"`
	RunID           string `json:"runId,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	MessageID       string `json:"messageId,omitempty"`
	Role            string `json:"role,omitempty"`
	Delta           any    `json:"delta,omitempty"` // text, or a JSON Patch for STATE_DELTA
	ToolCallID      string `json:"toolCallId,omitempty"`
	ToolCallName    string `json:"toolCallName,omitempty"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	// Content is a tool result's text (TOOL_CALL_RESULT), or an
	// activity's object (ACTIVITY_SNAPSHOT).
	Content      any             `json:"content,omitempty"`
	ActivityType string          `json:"activityType,omitempty"`
	Snapshot     json.RawMessage `json:"snapshot,omitempty"`
	StepName     string          `json:"stepName,omitempty"`
	Name         string          `json:"name,omitempty"`
	Value        json.RawMessage `json:"value,omitempty"`
	Message      string          `json:"message,omitempty"`
	Code         string          `json:"code,omitempty"`
	Outcome      *Outcome        `json:"outcome,omitempty"`
	// SubagentRunID names a sub-agent invocation (SUBAGENT_*).
	SubagentRunID    string         `json:"subagentRunId,omitempty"`
	ParentToolCallID string         `json:"parentToolCallId,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
}

// Outcome is why a run finished: "success" (with the frontend tool calls
// left for the client, if any) or "interrupt" (with what it waits for);
// for a sub-agent, "success" or "suspended".
type Outcome struct {
	Type               string             `json:"type"`
	PendingToolCallIDs []string           `json:"pendingToolCallIds,omitempty"`
	Interrupts         []WaitingInterrupt `json:"interrupts,omitempty"`
	// InterruptIDs are a suspended sub-agent's interrupts
	// (SUBAGENT_FINISHED's "suspended" outcome).
	InterruptIDs []string `json:"interruptIds,omitempty"`
}

// WaitingInterrupt is something the run waits for from a person.
type WaitingInterrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
}

// PatchOp is one JSON Patch operation (RFC 6902) of a STATE_DELTA.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Event types this wire sends.
const (
	RunStarted              = "RUN_STARTED"
	RunFinished             = "RUN_FINISHED"
	RunError                = "RUN_ERROR"
	StepStarted             = "STEP_STARTED"
	StepFinished            = "STEP_FINISHED"
	TextMessageStart        = "TEXT_MESSAGE_START"
	TextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd          = "TEXT_MESSAGE_END"
	ReasoningStart          = "REASONING_START"
	ReasoningMessageStart   = "REASONING_MESSAGE_START"
	ReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	ReasoningMessageEnd     = "REASONING_MESSAGE_END"
	ReasoningEnd            = "REASONING_END"
	ToolCallStart           = "TOOL_CALL_START"
	ToolCallArgs            = "TOOL_CALL_ARGS"
	ToolCallEnd             = "TOOL_CALL_END"
	ToolCallResult          = "TOOL_CALL_RESULT"
	StateSnapshot           = "STATE_SNAPSHOT"
	StateDelta              = "STATE_DELTA"
	Custom                  = "CUSTOM"
	SubagentStarted         = "SUBAGENT_STARTED"
	SubagentFinished        = "SUBAGENT_FINISHED"
	SubagentError           = "SUBAGENT_ERROR"
	// ActivitySnapshot carries an answer the run goes on with (activity
	// type AnswerActivity), at the start of the run that took it, or an
	// internal voice's message (NoteActivity) where it was written.
	ActivitySnapshot = "ACTIVITY_SNAPSHOT"
)

// AnswerActivity is the activity type of a person's answer in the
// history: content {text, outcome, interruptId, answer, asked}.
const AnswerActivity = "trellis.answer"

// NoteActivity is the activity type of the agent's working said by one
// of its internal voices (the builder's reviewer: an assistant message
// with a name), which is not a reply to the person: content {author,
// text}.
const NoteActivity = "trellis.note"

// ProtocolVersion is the AG-UI protocol version this wire speaks.
const ProtocolVersion = "1.0"
