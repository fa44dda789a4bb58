// Package checkpoint defines how a graph run's state is saved between steps:
// the Saver interface every backend implements, the types it stores, and an
// in-memory Saver for tests and single-process use.
//
// A checkpoint is written after every superstep. It does not hold a full copy
// of the state: it holds the version of every state key, and only the blobs
// of the keys that changed in that step. A last-value key's blob is its whole
// value; a reducer key's blob is usually a delta (the writes applied in that
// step) with a full snapshot every few versions, so a long chat thread's
// storage grows with its changes, not with its history. Savers store and
// return blobs as opaque JSON; only the graph engine, which knows each key's
// reducer, turns a chain of blobs back into a value.
//
// Every backend passes the shared conformance suite in package
// checkpoint/checkpointtest.
package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/google/uuid"
)

// Errors a Saver returns. Callers test them with errors.Is; backends wrap
// them with the thread and checkpoint they concern.
var (
	// ErrNotFound means the thread, namespace or checkpoint does not exist.
	ErrNotFound = errors.New("checkpoint: not found")
	// ErrConflict means a Put named a parent that is no longer the thread's
	// latest checkpoint: another writer committed first. The caller reloads
	// the thread and decides again; nothing was written.
	ErrConflict = errors.New("checkpoint: conflict: the thread moved on since the parent checkpoint was read")
)

// Ref names a checkpoint: a thread, a subgraph namespace inside that thread
// ("" for the root graph) and a checkpoint ID ("" means the latest one).
type Ref struct {
	ThreadID  string
	Namespace string
	ID        string
}

// String formats the reference for error messages and logs.
func (r Ref) String() string {
	s := "thread " + quote(r.ThreadID)
	if r.Namespace != "" {
		s += " namespace " + quote(r.Namespace)
	}
	if r.ID != "" {
		s += " checkpoint " + r.ID
	}
	return s
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// NewID returns a new checkpoint ID. IDs are UUIDv7 strings, so sorting IDs
// as strings sorts checkpoints by creation time.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Source says what wrote a checkpoint.
type Source string

// Checkpoint sources.
const (
	SourceInput  Source = "input"  // the run's input was applied
	SourceLoop   Source = "loop"   // a superstep committed
	SourceUpdate Source = "update" // a caller changed the state from outside (UpdateState)
	SourceFork   Source = "fork"   // a copy of an earlier checkpoint, starting a new branch
	SourceResume Source = "resume" // a copy of the latest checkpoint by a run that continues another run's pending work
)

// Metadata describes a checkpoint. It is stored beside the checkpoint and is
// what List filters on.
type Metadata struct {
	Source Source `json:"source"`
	// Step is the superstep that produced the checkpoint: a root run with
	// input first saves the state before it (source input, step -1 on a
	// new thread), then 0 for the input applied, then 1, 2, ... for each
	// committed superstep; a later run goes on from the thread's last step.
	Step int `json:"step"`
	// Parent is the ID of the checkpoint this one follows ("" for the first):
	// usually the previous latest, an older checkpoint for a fork.
	Parent string `json:"parent,omitempty"`
	// RunID identifies the Invoke or Stream call that wrote the checkpoint.
	RunID string `json:"run_id,omitempty"`
	// Extra holds caller-defined labels, also usable as List filters.
	Extra map[string]string `json:"extra,omitempty"`
}

// Field returns a metadata field by name for filtering: "source", "step",
// "parent", "run_id", or a key of Extra.
func (m Metadata) Field(name string) (string, bool) {
	switch name {
	case "source":
		return string(m.Source), true
	case "step":
		return fmt.Sprint(m.Step), true
	case "parent":
		return m.Parent, true
	case "run_id":
		return m.RunID, true
	}
	v, ok := m.Extra[name]
	return v, ok
}

// Matches reports whether every entry of filter equals the field of the same
// name (see Field). An empty filter matches everything.
func (m Metadata) Matches(filter map[string]string) bool {
	for k, want := range filter {
		if got, ok := m.Field(k); !ok || got != want {
			return false
		}
	}
	return true
}

// BlobKind says how a Blob's data rebuilds a key's value.
type BlobKind uint8

// Blob kinds.
const (
	// Full data is the whole value of the key at that version.
	Full BlobKind = iota + 1
	// Delta data is the list of writes that turn the value at version Base
	// into the value at Version; the engine replays them through the key's
	// reducer.
	Delta
)

// String names the kind.
func (k BlobKind) String() string {
	switch k {
	case Full:
		return "full"
	case Delta:
		return "delta"
	}
	return fmt.Sprintf("BlobKind(%d)", uint8(k))
}

// Blob is one version of one state key, encoded as JSON by the engine.
//
// A Saver stores blobs once per thread, namespace, key and version, not per
// checkpoint, so a version number must not be reused for other content in
// one thread namespace: a Put carrying a stored key and version again is
// accepted only if the blob is unchanged.
type Blob struct {
	Key     string          `json:"key"`
	Version uint64          `json:"version"`
	Kind    BlobKind        `json:"kind"`
	Base    uint64          `json:"base,omitempty"` // for Delta: the version it applies on top of
	Data    json.RawMessage `json:"data"`
}

// Task is a task scheduled to run in the step after a checkpoint.
type Task struct {
	// ID is the task's deterministic ID; pending writes and interrupts are
	// keyed on it.
	ID string `json:"id"`
	// Node is the node the task runs.
	Node string `json:"node"`
	// Path orders the task among its step's tasks; writes are applied in
	// path order.
	Path string `json:"path"`
	// Payload is the JSON of a Send's payload, nil for a task triggered by
	// an edge.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Checkpoint is the saved state of a graph between two supersteps.
type Checkpoint struct {
	// ID is assigned by the engine with NewID.
	ID string `json:"id"`
	// Versions is the version in force of every key that has a value.
	Versions map[string]uint64 `json:"versions"`
	// Blobs, on Put, are the blobs new at this checkpoint (keys whose version
	// changed). On Get, they are every blob needed to rebuild the state: for
	// each key in Versions, its chain from the last Full blob up to the
	// version in force, oldest first.
	Blobs []Blob `json:"blobs,omitempty"`
	// Next lists the tasks to run in the next superstep. Empty means the run
	// had finished when the checkpoint was written.
	Next []Task `json:"next,omitempty"`
	// Waiting records join edges that have seen some of their sources:
	// target node -> sources seen so far.
	Waiting map[string][]string `json:"waiting,omitempty"`
	// Deferred lists deferred nodes triggered but not yet run.
	Deferred []string `json:"deferred,omitempty"`
	// Created is when the engine made the checkpoint.
	Created time.Time `json:"created"`
}

// Reserved pending-write keys. State keys never start with "__".
const (
	WriteError     = "__error__"     // the task failed; value is the error text
	WriteInterrupt = "__interrupt__" // the task raised an interrupt
	WriteResume    = "__resume__"    // an answer to an interrupt
	WriteGoto      = "__goto__"      // the task's Command goto targets
	WriteStep      = "__step__"      // a durable step's result (graph.Durable), saved until the task finishes
)

// PendingWrite is one write of a task in the step after a checkpoint, saved
// as soon as the task finishes so that a resumed run does not run the task
// again.
type PendingWrite struct {
	TaskID string          `json:"task_id"`
	Index  int             `json:"index"` // position within the task's writes
	Key    string          `json:"key"`   // a state key or a reserved key above
	Value  json.RawMessage `json:"value"`
}

// Tuple is a checkpoint as read back from a Saver.
type Tuple struct {
	Ref        Ref            // thread, namespace and the checkpoint's ID
	Checkpoint Checkpoint     // with Blobs holding every chain needed to rebuild
	Metadata   Metadata       //
	Writes     []PendingWrite // pending writes of tasks after this checkpoint, by task then index
}

// ListOptions filters and bounds List.
type ListOptions struct {
	// Filter keeps checkpoints whose metadata matches (see Metadata.Matches).
	Filter map[string]string
	// Before keeps checkpoints older than this checkpoint ID.
	Before string
	// Limit is the most checkpoints returned; 0 means no limit.
	Limit int
}

// PruneOptions says which checkpoints Prune removes. Pruning never removes
// the latest checkpoint of a thread namespace, nor a blob that a kept
// checkpoint needs to rebuild its state. With both limits set, a checkpoint
// is removed when either limit selects it.
type PruneOptions struct {
	// ThreadID limits pruning to one thread; "" prunes every thread.
	ThreadID string
	// KeepLatest keeps the newest N checkpoints of each thread namespace;
	// 0 means no limit by count.
	KeepLatest int
	// OlderThan removes checkpoints created more than this long ago;
	// 0 means no limit by age.
	OlderThan time.Duration
}

// Saver stores checkpoints. Implementations are safe for concurrent use by
// many runs on many threads.
//
// Two writers on one thread: Put is given, in ref.ID, the checkpoint the
// writer read as the namespace's latest; when another writer has committed
// since, Put writes nothing and returns an error wrapping ErrConflict, so an
// update is never lost silently. (Metadata.Parent is the checkpoint tree's
// parent, which for a fork is older than the latest.)
//
// A stored row that cannot be decoded, fails its checksum, or does not pass
// Tuple.Validate is reported as an error wrapping ErrCorrupt naming the
// thread, namespace and checkpoint; a Saver never returns a zero value in
// its place. Every Saver has a size limit (DefaultMaxBytes unless
// configured) on one checkpoint row, blob or pending write, on Put and on
// read; exceeding it is an error wrapping ErrTooLarge.
type Saver interface {
	// Get returns the checkpoint ref names, or the latest of its thread
	// namespace when ref.ID is "". It wraps ErrNotFound when there is none.
	Get(ctx context.Context, ref Ref) (*Tuple, error)
	// List returns the checkpoints of ref's thread namespace, newest first.
	List(ctx context.Context, ref Ref, opts ListOptions) iter.Seq2[*Tuple, error]
	// Put stores a checkpoint after the latest of ref's thread namespace and
	// returns its reference. ref.ID is the latest checkpoint as the writer
	// read it ("" for an empty namespace); see ErrConflict. cp.ID must be
	// new and sort after the latest checkpoint's ID (NewID does this).
	Put(ctx context.Context, ref Ref, cp Checkpoint, md Metadata) (Ref, error)
	// PutWrites stores the pending writes of one task in the step after the
	// checkpoint ref names. Writing the same task's writes again replaces
	// them.
	PutWrites(ctx context.Context, ref Ref, taskID string, writes []PendingWrite) error
	// DeleteThread removes a thread with all its namespaces, checkpoints and
	// writes. Deleting a missing thread is not an error.
	DeleteThread(ctx context.Context, threadID string) error
	// CopyThread copies every checkpoint and write of thread from into
	// thread to, which must not exist yet.
	CopyThread(ctx context.Context, from, to string) error
	// Prune removes old checkpoints as opts says and reports how many it
	// removed.
	Prune(ctx context.Context, opts PruneOptions) (int, error)
	// DeleteRun removes, atomically, every checkpoint of thread threadID
	// whose Metadata.RunID is runID, in every namespace, with the pending
	// writes attached to those checkpoints and every blob that no
	// remaining checkpoint needs to rebuild its state. It returns how many
	// checkpoints it removed: 0 and nil for an unknown thread or run. An
	// empty runID is an error (checkpoints without a run ID are not a run).
	//
	// Afterwards each namespace's latest checkpoint is its newest remaining
	// one (a namespace left empty is gone), so the next Put names that one
	// as its parent, and may store again a key and version whose blob was
	// removed, with other content. Pending writes the run attached to a
	// checkpoint of another run (a resumed run's first task results belong
	// to the checkpoint it resumed from) are not touched. This is what a
	// service's "rollback" of a run uses.
	DeleteRun(ctx context.Context, threadID, runID string) (int, error)
}
