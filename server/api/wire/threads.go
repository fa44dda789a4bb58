package wire

import (
	"encoding/json"
	"strconv"
)

// ThreadCreate is the body of POST /threads.
type ThreadCreate struct {
	// ThreadID is the client-chosen ID (a UUID is made when absent).
	ThreadID string `json:"thread_id,omitempty"`
	// Metadata is stored and searchable; the SDK puts graph_id here.
	Metadata Metadata `json:"metadata,omitempty"`
	// IfExists is what to do when ThreadID is taken (default "raise").
	IfExists IfExists `json:"if_exists,omitempty"`
	// Supersteps pre-populate the thread: each superstep's updates are
	// applied as state updates by the named nodes, in order. Honoured.
	Supersteps []Superstep `json:"supersteps,omitempty"`
	// TTL deletes the thread that long after its last update. Honoured.
	TTL *TTL `json:"ttl,omitempty"`
}

// Validate checks the thread ID (the ID rule) and the supersteps.
func (b *ThreadCreate) Validate() []FieldError {
	errs := idErrors("/thread_id", b.ThreadID)
	for i, s := range b.Supersteps {
		p := "/supersteps/" + strconv.Itoa(i)
		if len(s.Updates) == 0 {
			errs = append(errs, FieldError{Pointer: p + "/updates", Detail: "must list at least one update"})
		}
		for j, u := range s.Updates {
			q := p + "/updates/" + strconv.Itoa(j)
			errs = append(errs, nonEmpty(q+"/as_node", u.AsNode, "the node the update is applied as")...)
			errs = append(errs, u.Command.validate(q+"/command")...)
		}
	}
	return errs
}

// Superstep is one step of ThreadCreate.Supersteps.
type Superstep struct {
	Updates []SuperstepUpdate `json:"updates"`
}

// SuperstepUpdate is one update of a Superstep.
type SuperstepUpdate struct {
	// Values are the state update.
	Values json.RawMessage `json:"values,omitempty"`
	// Command is applied instead of (or with) values.
	Command *Command `json:"command,omitempty"`
	// AsNode is the node the update is attributed to. Required.
	AsNode string `json:"as_node"`
}

// ThreadPatch is the body of PATCH /threads/{thread_id}; the header
// "Prefer: return=minimal" answers 204 instead of the thread.
type ThreadPatch struct {
	// Metadata is merged into the thread's (a key with null removes it).
	Metadata Metadata `json:"metadata,omitempty"`
	// TTL replaces the thread's time to live.
	TTL *TTL `json:"ttl,omitempty"`
}

// ThreadSearch is the body of POST /threads/search.
type ThreadSearch struct {
	// Metadata keeps those whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// IDs limits the search to these threads.
	IDs []string `json:"ids,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Offset skips this many results.
	Offset int `json:"offset,omitempty"`
	// Status keeps threads with this status.
	Status ThreadStatus `json:"status,omitempty"`
	// SortBy and SortOrder order the results (default: updated_at desc).
	SortBy    ThreadSortBy `json:"sort_by,omitempty"`
	SortOrder SortOrder    `json:"sort_order,omitempty"`
	// Select limits each thread to these fields.
	Select []ThreadSelectField `json:"select,omitempty"`
	// Values matches threads whose state has these values (containment).
	Values map[string]any `json:"values,omitempty"`
	// Extract names JSON paths into each thread to return as "extracted"
	// (name → path). Accepted and ignored: Trellis returns no extracted.
	Extract map[string]string `json:"extract,omitempty"`
	// Title is a Trellis extension: keep threads whose metadata "title"
	// contains this text, case-insensitive (the page's thread search).
	Title string `json:"title,omitempty"`
}

// Validate checks limit and offset.
func (b *ThreadSearch) Validate() []FieldError { return pageErrors("", b.Limit, b.Offset) }

// ThreadCount is the body of POST /threads/count; the answer is a bare
// JSON integer.
type ThreadCount struct {
	// Metadata keeps those whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// Values keeps threads whose state contains these values.
	Values map[string]any `json:"values,omitempty"`
	// Status keeps threads with this status.
	Status ThreadStatus `json:"status,omitempty"`
	// Title is a Trellis extension: count threads whose metadata "title"
	// contains this text, case-insensitive.
	Title string `json:"title,omitempty"`
}

// ThreadPrune is the body of POST /threads/prune.
type ThreadPrune struct {
	// ThreadIDs are the threads to prune. Required.
	ThreadIDs []string `json:"thread_ids"`
	// Strategy is "delete" (the default) or "keep_latest".
	Strategy PruneStrategy `json:"strategy,omitempty"`
}

// Validate requires thread IDs.
func (b *ThreadPrune) Validate() []FieldError {
	var errs []FieldError
	for i, id := range b.ThreadIDs {
		errs = append(errs, nonEmpty("/thread_ids/"+strconv.Itoa(i), id, "a thread ID")...)
	}
	return errs
}

// ThreadPruneResult is the answer of POST /threads/prune.
type ThreadPruneResult struct {
	PrunedCount int `json:"pruned_count"`
}

// ThreadGetQuery is the query of GET /threads/{thread_id}.
type ThreadGetQuery struct {
	// Include asks for extra fields; accepted and ignored.
	Include []string `json:"include,omitempty"`
}

// ThreadStateQuery is the query of GET /threads/{thread_id}/state and
// GET /threads/{thread_id}/state/{checkpoint_id}.
type ThreadStateQuery struct {
	// Subgraphs includes the state of subgraphs in the tasks. Honoured.
	Subgraphs bool `json:"subgraphs,omitempty"`
	// Select limits the state to these fields. Honoured.
	Select []StateSelectField `json:"select,omitempty"`
}

// ThreadStateAt is the body of POST /threads/{thread_id}/state/checkpoint.
type ThreadStateAt struct {
	// Checkpoint is the checkpoint to read. Required.
	Checkpoint CheckpointSelector `json:"checkpoint"`
	// Subgraphs includes subgraphs' states in the tasks.
	Subgraphs bool `json:"subgraphs,omitempty"`
	// Select limits each state to these fields.
	Select []StateSelectField `json:"select,omitempty"`
}

// ThreadStateUpdate is the body of POST /threads/{thread_id}/state: a
// state update as if as_node had just run. The answer is
// ThreadStateUpdateResult.
type ThreadStateUpdate struct {
	// Values is the update (an object of state keys, or null for none).
	Values json.RawMessage `json:"values,omitempty"`
	// Checkpoint forks from this checkpoint instead of the latest.
	Checkpoint *CheckpointSelector `json:"checkpoint,omitempty"`
	// CheckpointID is the short form of checkpoint.checkpoint_id.
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// AsNode is the node the update is attributed to (default: the last
	// node that ran, when that is unambiguous).
	AsNode string `json:"as_node,omitempty"`
}

// ThreadStateUpdateResult is the answer of POST /threads/{thread_id}/state.
type ThreadStateUpdateResult struct {
	// Checkpoint is the checkpoint the update wrote.
	Checkpoint Checkpoint `json:"checkpoint"`
}

// ThreadStatePatch is the body of PATCH /threads/{thread_id}/state: the
// latest checkpoint's metadata is merged with it.
type ThreadStatePatch struct {
	// Metadata is merged (top-level keys) into the checkpoint's metadata.
	Metadata Metadata `json:"metadata"`
	// Checkpoint names the checkpoint to patch instead of the latest.
	Checkpoint *CheckpointSelector `json:"checkpoint,omitempty"`
	// CheckpointID is the short form of checkpoint.checkpoint_id.
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Validate requires metadata.
func (b *ThreadStatePatch) Validate() []FieldError {
	if b.Metadata == nil {
		return []FieldError{{Pointer: "/metadata", Detail: "required: an object of the keys to merge into the checkpoint's metadata"}}
	}
	return nil
}

// ThreadHistory is the body of POST /threads/{thread_id}/history: past
// states, newest first.
type ThreadHistory struct {
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit *int `json:"limit,omitempty"`
	// Before lists only states older than config.configurable.checkpoint_id.
	Before *Config `json:"before,omitempty"`
	// Metadata keeps states whose checkpoint metadata contains it.
	Metadata Metadata `json:"metadata,omitempty"`
	// Checkpoint selects a namespace (checkpoint_ns) or starting checkpoint.
	Checkpoint *CheckpointSelector `json:"checkpoint,omitempty"`
	// Select limits each state to these fields.
	Select []StateSelectField `json:"select,omitempty"`
}

// Validate checks the limit.
func (b *ThreadHistory) Validate() []FieldError { return pageErrors("", b.Limit, 0) }

// ThreadJoinStreamQuery is the query of GET /threads/{thread_id}/stream
// (the Last-Event-ID header resumes).
type ThreadJoinStreamQuery struct {
	StreamMode []ThreadStreamMode `json:"stream_mode,omitempty"`
}

// Thread is a thread as responses show it.
type Thread struct {
	ThreadID       string `json:"thread_id"`
	CreatedAt      Time   `json:"created_at"`
	UpdatedAt      Time   `json:"updated_at"`
	StateUpdatedAt Time   `json:"state_updated_at"`
	// Metadata is free-form JSON metadata.
	Metadata Metadata     `json:"metadata"`
	Status   ThreadStatus `json:"status"`
	// Values is the thread's current state (null before the first run).
	Values any `json:"values"`
	// Interrupts maps task IDs to their pending interrupts.
	Interrupts map[string][]Interrupt `json:"interrupts"`
	// Config replaces the assistant's config (see Config).
	Config *Config `json:"config,omitempty"`
	// Error describes the last run's failure when status is "error".
	Error any `json:"error,omitempty"`
}

// ThreadState is a thread's state at a checkpoint.
type ThreadState struct {
	Values any `json:"values"`
	// Next lists the nodes that run next; empty when the thread is done
	// until new input.
	Next       []string   `json:"next"`
	Checkpoint Checkpoint `json:"checkpoint"`
	// Metadata is free-form JSON metadata.
	Metadata         Metadata     `json:"metadata"`
	CreatedAt        *Time        `json:"created_at"`
	ParentCheckpoint *Checkpoint  `json:"parent_checkpoint"`
	Tasks            []ThreadTask `json:"tasks"`
	// Interrupts are the pending interrupts of every task.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// ThreadTask is a task of the step a ThreadState is before.
type ThreadTask struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Result     any         `json:"result,omitempty"`
	Error      *string     `json:"error"`
	Interrupts []Interrupt `json:"interrupts"`
	Checkpoint *Checkpoint `json:"checkpoint"`
	// State is the subgraph's state (with subgraphs=true).
	State *ThreadState `json:"state"`
}
