package wire

// The string enums of LangGraph's wire. Decode rejects any other value with
// a 422 listing the allowed ones; the OpenAPI document lists them too (both
// read Values). Values the pinned SDK's types allow are always accepted,
// even where Trellis does nothing with them (each type says which).

// MultitaskStrategy is what a new run on a busy thread does (double
// texting). Trellis honours all four.
type MultitaskStrategy string

// MultitaskStrategy values.
const (
	MultitaskReject    MultitaskStrategy = "reject"    // 409, the new run is not created
	MultitaskInterrupt MultitaskStrategy = "interrupt" // the current run stops, keeping finished tasks' writes
	MultitaskRollback  MultitaskStrategy = "rollback"  // the current run and everything it wrote is removed
	MultitaskEnqueue   MultitaskStrategy = "enqueue"   // the new run waits its turn (the default)
)

// Values lists the allowed values.
func (MultitaskStrategy) Values() []string {
	return []string{"reject", "interrupt", "rollback", "enqueue"}
}

// OnDisconnect is what happens to a run when the client streaming or
// waiting on it disconnects. Trellis honours both; the default is
// "continue" for background creates and "cancel" for /stream and /wait, as
// LangGraph does.
type OnDisconnect string

// OnDisconnect values.
const (
	DisconnectCancel   OnDisconnect = "cancel"
	DisconnectContinue OnDisconnect = "continue"
)

// Values lists the allowed values.
func (OnDisconnect) Values() []string { return []string{"cancel", "continue"} }

// Durability is when checkpoints are saved. Trellis honours it with the
// engine's durability modes ("async" is the default).
type Durability string

// Durability values.
const (
	DurabilityExit  Durability = "exit"
	DurabilityAsync Durability = "async"
	DurabilitySync  Durability = "sync"
)

// Values lists the allowed values.
func (Durability) Values() []string { return []string{"exit", "async", "sync"} }

// IfExists is what creating an assistant or thread with a taken ID does.
type IfExists string

// IfExists values.
const (
	IfExistsRaise     IfExists = "raise"      // 409 (the default)
	IfExistsDoNothing IfExists = "do_nothing" // answer with the existing one
)

// Values lists the allowed values.
func (IfExists) Values() []string { return []string{"raise", "do_nothing"} }

// IfNotExists is what a run on a thread ID that does not exist does.
type IfNotExists string

// IfNotExists values.
const (
	IfNotExistsReject IfNotExists = "reject" // 404 (the default)
	IfNotExistsCreate IfNotExists = "create" // create the thread with that ID
)

// Values lists the allowed values.
func (IfNotExists) Values() []string { return []string{"create", "reject"} }

// OnCompletion is what a stateless run does with its temporary thread
// when it ends: "delete" (the default) or "keep". The pinned JS SDK's type
// also lists "complete" and "continue"; they are accepted and mean the
// default.
type OnCompletion string

// OnCompletion values.
const (
	OnCompletionDelete OnCompletion = "delete"
	OnCompletionKeep   OnCompletion = "keep"
)

// Values lists the allowed values.
func (OnCompletion) Values() []string { return []string{"delete", "keep", "complete", "continue"} }

// StreamMode is one kind of event a streamed run sends. Trellis produces
// values, updates, messages, messages-tuple, custom, tasks, checkpoints and
// debug; "events", "tools" and "lifecycle" are accepted (the SDK's type
// lists them) and produce no events.
type StreamMode string

// StreamMode values.
const (
	StreamValues        StreamMode = "values"
	StreamUpdates       StreamMode = "updates"
	StreamMessages      StreamMode = "messages"
	StreamMessagesTuple StreamMode = "messages-tuple"
	StreamCustom        StreamMode = "custom"
	StreamTasks         StreamMode = "tasks"
	StreamCheckpoints   StreamMode = "checkpoints"
	StreamDebug         StreamMode = "debug"
	StreamEvents        StreamMode = "events"
	StreamTools         StreamMode = "tools"
	StreamLifecycle     StreamMode = "lifecycle"
)

// Values lists the allowed values.
func (StreamMode) Values() []string {
	return []string{"values", "updates", "messages", "messages-tuple", "custom", "tasks",
		"checkpoints", "debug", "events", "tools", "lifecycle"}
}

// ThreadStreamMode selects what joining a thread's stream sends
// (GET /threads/{thread_id}/stream). Trellis sends "run_modes" (the events
// of the runs on the thread, the default) and accepts the other two.
type ThreadStreamMode string

// Values lists the allowed values.
func (ThreadStreamMode) Values() []string { return []string{"run_modes", "lifecycle", "state_update"} }

// ThreadStatus is a thread's status.
type ThreadStatus string

// ThreadStatus values.
const (
	ThreadIdle        ThreadStatus = "idle"
	ThreadBusy        ThreadStatus = "busy"
	ThreadInterrupted ThreadStatus = "interrupted"
	ThreadError       ThreadStatus = "error"
)

// Values lists the allowed values.
func (ThreadStatus) Values() []string { return []string{"idle", "busy", "interrupted", "error"} }

// RunStatus is a run's status.
type RunStatus string

// RunStatus values.
const (
	RunPending     RunStatus = "pending"
	RunRunning     RunStatus = "running"
	RunSuccess     RunStatus = "success"
	RunError       RunStatus = "error"
	RunTimeout     RunStatus = "timeout"
	RunInterrupted RunStatus = "interrupted"
)

// Values lists the allowed values.
func (RunStatus) Values() []string {
	return []string{"pending", "running", "success", "error", "timeout", "interrupted"}
}

// CancelAction is how a cancel stops a run.
type CancelAction string

// CancelAction values.
const (
	CancelInterrupt CancelAction = "interrupt" // stop, keep what finished (the default)
	CancelRollback  CancelAction = "rollback"  // stop and remove the run and its writes
)

// Values lists the allowed values.
func (CancelAction) Values() []string { return []string{"interrupt", "rollback"} }

// CancelReason qualifies a cancel; "taken" marks the run's input as
// absorbed by another run (steering) and is recorded as the run's
// cancel_reason "taken: ...". Only with action "interrupt".
type CancelReason string

// Values lists the allowed values.
func (CancelReason) Values() []string { return []string{"taken"} }

// CancelStatus selects runs to cancel in bulk by status.
type CancelStatus string

// Values lists the allowed values.
func (CancelStatus) Values() []string { return []string{"pending", "running", "all"} }

// PruneStrategy is what pruning does to each thread: "delete" removes it;
// "keep_latest" keeps the thread and its latest checkpoint only.
type PruneStrategy string

// Values lists the allowed values.
func (PruneStrategy) Values() []string { return []string{"delete", "keep_latest"} }

// TTLStrategy is what happens to a thread when its TTL runs out: "delete"
// deletes it, "keep_latest" prunes it to its latest checkpoint.
type TTLStrategy string

// Values lists the allowed values.
func (TTLStrategy) Values() []string { return []string{"delete", "keep_latest"} }

// SortOrder orders search results.
type SortOrder string

// Values lists the allowed values.
func (SortOrder) Values() []string { return []string{"asc", "desc"} }

// AssistantSortBy is the field assistants are sorted by.
type AssistantSortBy string

// Values lists the allowed values.
func (AssistantSortBy) Values() []string {
	return []string{"assistant_id", "graph_id", "name", "created_at", "updated_at"}
}

// ThreadSortBy is the field threads are sorted by.
type ThreadSortBy string

// Values lists the allowed values.
func (ThreadSortBy) Values() []string {
	return []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
}

// AssistantSelectField is a field an assistant search may return alone.
type AssistantSelectField string

// Values lists the allowed values.
func (AssistantSelectField) Values() []string {
	return []string{"assistant_id", "graph_id", "name", "description", "config", "context",
		"created_at", "updated_at", "metadata", "version"}
}

// ThreadSelectField is a field a thread search may return alone.
type ThreadSelectField string

// Values lists the allowed values.
func (ThreadSelectField) Values() []string {
	return []string{"thread_id", "created_at", "updated_at", "state_updated_at", "metadata",
		"config", "context", "status", "values", "interrupts"}
}

// RunSelectField is a field a run listing may return alone.
type RunSelectField string

// Values lists the allowed values.
func (RunSelectField) Values() []string {
	return []string{"run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status",
		"metadata", "kwargs", "multitask_strategy", "cancel_reason"}
}
