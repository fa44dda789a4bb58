package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// RunCreate is the body of every run creation: POST /threads/{thread_id}/runs
// (background), .../runs/stream, .../runs/wait, and the stateless /runs,
// /runs/stream, /runs/wait (and each item of /runs/batch). The SDK sends
// one shape to all of them, leaving out what a route does not use.
type RunCreate struct {
	// AssistantID is the assistant (or graph ID, which names the graph's
	// default assistant) to run. Required.
	AssistantID string `json:"assistant_id"`
	// Input is the graph's input. Absent or null starts from the thread's
	// current state (LangGraph's "resume with no input"); on a thread
	// waiting at an interrupt, new input starts a new run from the current
	// state. Messages may be LangChain message JSON ({"role": "user"} or
	// {"type": "human"}). Honoured.
	Input json.RawMessage `json:"input,omitempty"`
	// Command resumes or steers the thread instead of input. Honoured.
	Command *Command `json:"command,omitempty"`
	// Checkpoint starts the run from this checkpoint (a fork) instead of
	// the latest. Honoured.
	Checkpoint *CheckpointSelector `json:"checkpoint,omitempty"`
	// CheckpointID is the short form of checkpoint.checkpoint_id. Honoured.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Config is merged over the assistant's config. Honoured (see Config).
	Config *Config `json:"config,omitempty"`
	// Context is the run context, merged over the assistant's; when absent,
	// config.configurable is used, as LangGraph does. Saved with the run
	// and restored on every resume. Honoured.
	Context json.RawMessage `json:"context,omitempty"`
	// Metadata is stored on the run and on the checkpoints it writes.
	// Honoured.
	Metadata Metadata `json:"metadata,omitempty"`
	// InterruptBefore pauses before these nodes. Honoured.
	InterruptBefore *NodeSelector `json:"interrupt_before,omitempty"`
	// InterruptAfter pauses after these nodes. Honoured.
	InterruptAfter *NodeSelector `json:"interrupt_after,omitempty"`
	// StreamMode chooses the streamed events (default "values"); for a
	// background run it chooses what a later join sees. Honoured.
	StreamMode StreamModes `json:"stream_mode,omitempty"`
	// StreamSubgraphs adds subgraphs' events, named "mode|namespace".
	// Honoured.
	StreamSubgraphs bool `json:"stream_subgraphs,omitempty"`
	// StreamResumable keeps the run's events after a restart so a stream
	// can be rejoined from any event. Honoured (Trellis keeps every run's
	// events for a documented time in any case).
	StreamResumable bool `json:"stream_resumable,omitempty"`
	// FeedbackKeys asks for LangSmith feedback URLs; accepted and ignored.
	FeedbackKeys []string `json:"feedback_keys,omitempty"`
	// Webhook is an http(s) URL to POST the finished run to (with its
	// final values). Honoured; loopback and private addresses are refused
	// unless the server allows them.
	Webhook string `json:"webhook,omitempty"`
	// StrictResume makes a resume that answers no waiting interrupt fail
	// with a 422 instead of being ignored. Honoured (Trellis is always
	// strict: an answer with nothing pending is a 422 either way).
	StrictResume bool `json:"strict_resume,omitempty"`
	// MultitaskStrategy is what happens when the thread is busy (default
	// "enqueue"). Honoured; not for stateless runs.
	MultitaskStrategy MultitaskStrategy `json:"multitask_strategy,omitempty"`
	// OnCompletion is what a stateless run does with its temporary thread.
	// Honoured for stateless runs.
	OnCompletion OnCompletion `json:"on_completion,omitempty"`
	// OnDisconnect is what a client disconnecting from /stream or /wait
	// does to the run. Honoured.
	OnDisconnect OnDisconnect `json:"on_disconnect,omitempty"`
	// AfterSeconds delays the run's start. Honoured.
	AfterSeconds float64 `json:"after_seconds,omitempty"`
	// IfNotExists is what happens when the thread does not exist. Honoured.
	IfNotExists IfNotExists `json:"if_not_exists,omitempty"`
	// CheckpointDuring is the deprecated form of durability: false is
	// "exit", true is "async". Honoured when durability is absent.
	CheckpointDuring *bool `json:"checkpoint_during,omitempty"`
	// Durability is when checkpoints are saved. Honoured.
	Durability Durability `json:"durability,omitempty"`
	// LangsmithTracer is the SDK's tracing hint; accepted and ignored.
	LangsmithTracer *LangsmithTracer `json:"langsmith_tracer,omitempty"`
	// AssistantVersion is a Trellis extension: the assistant version to
	// run (its graph, config and context), whatever version is the
	// latest. Left out, a run on a thread whose latest run was of the same
	// assistant continues that run's version; otherwise it runs the
	// latest. A version the assistant does not have is a 422.
	AssistantVersion int `json:"assistant_version,omitempty"`
}

// Validate checks the rules across fields.
func (b *RunCreate) Validate() []FieldError { return b.validate("") }

func (b *RunCreate) validate(ptr string) []FieldError {
	var errs []FieldError
	errs = append(errs, nonEmpty(ptr+"/assistant_id", b.AssistantID, "an assistant ID or graph ID")...)
	if b.Command != nil && len(b.Input) > 0 && string(b.Input) != "null" {
		errs = append(errs, FieldError{Pointer: ptr + "/command", Detail: "send input or command, not both: input starts a new run, command resumes or steers a waiting one"})
	}
	errs = append(errs, b.Command.validate(ptr+"/command")...)
	errs = append(errs, b.Config.validate(ptr+"/config")...)
	if b.Checkpoint != nil && b.CheckpointID != "" && b.Checkpoint.CheckpointID != "" && b.Checkpoint.CheckpointID != b.CheckpointID {
		errs = append(errs, FieldError{Pointer: ptr + "/checkpoint_id", Detail: fmt.Sprintf("names checkpoint %q but checkpoint.checkpoint_id names %q; send one", b.CheckpointID, b.Checkpoint.CheckpointID)})
	}
	if b.AfterSeconds < 0 || b.AfterSeconds > 366*24*3600 {
		errs = append(errs, FieldError{Pointer: ptr + "/after_seconds", Detail: fmt.Sprintf("must be between 0 and one year in seconds, not %v", b.AfterSeconds)})
	}
	if b.Webhook != "" {
		errs = append(errs, httpURL(ptr+"/webhook", b.Webhook)...)
	}
	if b.AssistantVersion < 0 {
		errs = append(errs, FieldError{Pointer: ptr + "/assistant_version", Detail: fmt.Sprintf("must be 1 or more (or left out to run the latest version), not %d", b.AssistantVersion)})
	}
	return append(errs, objectOrNull(ptr+"/context", b.Context)...)
}

// EffectiveDurability is durability, else the one checkpoint_during
// implies, else "async".
func (b *RunCreate) EffectiveDurability() Durability {
	switch {
	case b.Durability != "":
		return b.Durability
	case b.CheckpointDuring != nil && !*b.CheckpointDuring:
		return DurabilityExit
	}
	return DurabilityAsync
}

// EffectiveCheckpointID is checkpoint_id, else checkpoint.checkpoint_id
// ("" for the latest).
func (b *RunCreate) EffectiveCheckpointID() string {
	if b.CheckpointID != "" {
		return b.CheckpointID
	}
	if b.Checkpoint != nil {
		return b.Checkpoint.CheckpointID
	}
	return ""
}

// RunBatch is the body of POST /runs/batch: stateless runs to create.
// The pinned SDK sends each item's fields as the caller wrote them
// (camelCase such as streamMode next to assistant_id), so each item
// accepts the camelCase spelling of every RunCreate field too; when both
// spellings are present, the snake_case one wins.
type RunBatch []BatchRun

// MaxBatch is the most runs one /runs/batch creates.
const MaxBatch = 100

// Validate checks every item.
func (b *RunBatch) Validate() []FieldError {
	if len(*b) == 0 {
		return []FieldError{{Pointer: "", Detail: "must list at least one run"}}
	}
	if len(*b) > MaxBatch {
		return []FieldError{{Pointer: "", Detail: fmt.Sprintf("lists %d runs; at most %d per batch", len(*b), MaxBatch)}}
	}
	var errs []FieldError
	for i := range *b {
		errs = append(errs, (*b)[i].RunCreate.validate("/"+strconv.Itoa(i))...)
	}
	return errs
}

// BatchRun is one item of a RunBatch.
type BatchRun struct{ RunCreate }

// camelAliases maps the SDK's camelCase option names to wire names.
var camelAliases = map[string]string{
	"assistantId": "assistant_id", "checkpointId": "checkpoint_id", "interruptBefore": "interrupt_before",
	"interruptAfter": "interrupt_after", "streamMode": "stream_mode", "streamSubgraphs": "stream_subgraphs",
	"streamResumable": "stream_resumable", "feedbackKeys": "feedback_keys", "strictResume": "strict_resume",
	"multitaskStrategy": "multitask_strategy", "onCompletion": "on_completion", "onDisconnect": "on_disconnect",
	"afterSeconds": "after_seconds", "ifNotExists": "if_not_exists", "checkpointDuring": "checkpoint_during",
	"assistantVersion": "assistant_version",
}

func (b *BatchRun) decodeWire(ptr string, v any) []FieldError {
	m, ok := v.(map[string]any)
	if !ok {
		return []FieldError{{Pointer: ptr, Detail: "must be an object (a run to create), not " + kindOf(v)}}
	}
	norm := make(map[string]any, len(m))
	for k, e := range m {
		if snake, ok := camelAliases[k]; ok {
			if _, both := m[snake]; both {
				continue
			}
			k = snake
		}
		norm[k] = e
	}
	d := &walker{}
	d.assignStruct(ptr, norm, refValue(&b.RunCreate))
	return d.errs
}

// UnmarshalJSON accepts what Decode accepts.
func (b *BatchRun) UnmarshalJSON(data []byte) error { return decodeInto(data, b) }

// MarshalJSON writes the run in snake_case.
func (b BatchRun) MarshalJSON() ([]byte, error) { return json.Marshal(b.RunCreate) }

// RunCancelMany is the body of POST /runs/cancel: the runs to cancel,
// either by run_ids (within thread_id when given) or by status. The query's
// action says how.
type RunCancelMany struct {
	// ThreadID limits the cancel to one thread.
	ThreadID string `json:"thread_id,omitempty"`
	// RunIDs are the runs to cancel.
	RunIDs []string `json:"run_ids,omitempty"`
	// Status cancels every run with this status ("all" for pending and
	// running).
	Status CancelStatus `json:"status,omitempty"`
}

// Validate requires run_ids or status, not both.
func (b *RunCancelMany) Validate() []FieldError {
	switch {
	case len(b.RunIDs) == 0 && b.Status == "":
		return []FieldError{{Pointer: "", Detail: "say which runs to cancel: run_ids (with thread_id) or status"}}
	case len(b.RunIDs) > 0 && b.Status != "":
		return []FieldError{{Pointer: "/status", Detail: "send run_ids or status, not both"}}
	case len(b.RunIDs) > 0 && b.ThreadID == "":
		return []FieldError{{Pointer: "/thread_id", Detail: "required with run_ids"}}
	}
	return nil
}

// RunStreamQuery is the query of the POST .../runs/stream routes.
type RunStreamQuery struct {
	// Namespace streams only these namespaces ("" is the root). Honoured.
	Namespace []string `json:"namespace,omitempty"`
}

// RunListQuery is the query of GET /threads/{thread_id}/runs.
type RunListQuery struct {
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
	// Status keeps runs with this status.
	Status RunStatus `json:"status,omitempty"`
	// Select limits each run to these fields.
	Select []RunSelectField `json:"select,omitempty"`
}

// Validate checks limit and offset.
func (q *RunListQuery) Validate() []FieldError { return pageErrors("", q.Limit, q.Offset) }

// RunCancelQuery is the query of POST .../runs/{run_id}/cancel.
type RunCancelQuery struct {
	// Wait answers only when the run has stopped ("1"), else at once.
	Wait bool `json:"wait,omitempty"`
	// Action is how to stop it (default "interrupt").
	Action CancelAction `json:"action,omitempty"`
	// Reason "taken" records the input as absorbed (with interrupt only).
	Reason CancelReason `json:"reason,omitempty"`
}

// Validate allows reason only with action interrupt.
func (q *RunCancelQuery) Validate() []FieldError {
	if q.Reason != "" && q.Action == CancelRollback {
		return []FieldError{{Pointer: "/reason", Detail: "is only allowed with action \"interrupt\""}}
	}
	return nil
}

// RunCancelManyQuery is the query of POST /runs/cancel.
type RunCancelManyQuery struct {
	// Action is how to stop the runs (default "interrupt").
	Action CancelAction `json:"action,omitempty"`
}

// RunJoinQuery is the query of GET .../runs/{run_id}/join.
type RunJoinQuery struct {
	// CancelOnDisconnect cancels the run if this request goes away.
	CancelOnDisconnect bool `json:"cancel_on_disconnect,omitempty"`
}

// RunJoinStreamQuery is the query of GET .../runs/{run_id}/stream (the
// Last-Event-ID header says where to resume; "-1" replays everything).
type RunJoinStreamQuery struct {
	// CancelOnDisconnect cancels the run if this request goes away.
	CancelOnDisconnect bool `json:"cancel_on_disconnect,omitempty"`
	// StreamMode narrows the joined events to these modes (default: the
	// run's own).
	StreamMode StreamModes `json:"stream_mode,omitempty"`
	// Namespace streams only these namespaces.
	Namespace []string `json:"namespace,omitempty"`
	// CheckpointID is sent by the SDK; accepted and ignored.
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Run is a run as responses show it.
type Run struct {
	RunID       string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	CreatedAt   Time      `json:"created_at"`
	UpdatedAt   Time      `json:"updated_at"`
	Status      RunStatus `json:"status"`
	// Metadata is free-form JSON metadata.
	Metadata Metadata `json:"metadata"`
	// MultitaskStrategy is the strategy the run was created with.
	MultitaskStrategy *MultitaskStrategy `json:"multitask_strategy"`
	// Kwargs is the creation body as stored (only when selected).
	Kwargs json.RawMessage `json:"kwargs,omitempty"`
	// CancelReason says why the run was cancelled, if it was.
	CancelReason *string `json:"cancel_reason,omitempty"`
	// Usage is a Trellis extension: what the run consumed so far.
	Usage *RunUsage `json:"usage,omitempty"`
	// AssistantVersion is a Trellis extension: the assistant version the
	// run executes, absent when it runs the latest.
	AssistantVersion int `json:"assistant_version,omitempty"`
}

// RunUsage is what a run consumed (a Trellis extension field of Run).
type RunUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ModelCalls   int64 `json:"model_calls"`
	// DurationMS is the time the run spent executing, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

// RunFailure is the __error__ member of a /wait or /join answer for a run
// that failed: the SDK's wait raises "error: message" from it.
type RunFailure struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// RunResult is the answer of /runs/wait and /join: the thread's final
// state values (an object), with "__error__" added when the run failed
// and "__interrupt__" when it stopped at an interrupt.
type RunResult = json.RawMessage
