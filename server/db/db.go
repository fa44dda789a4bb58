// Package db is the agent service's store of record: assistants, threads,
// runs, their event logs, the leases that fence running runs, crons, and
// evaluation datasets and run feedback (datasets.go). One
// interface, DB, with a SQLite implementation (server/db/sqlite, the
// embedded default) and a PostgreSQL one (server/db/postgres); both pass the
// conformance suite in server/db/dbtest.
//
// Every method takes the tenant first: rows of one tenant are invisible to
// another, whatever IDs a caller passes, so a handler cannot forget to scope
// a query. Checkpoints and long-term store items live in the checkpoint and
// store packages; the run service maps (tenant, thread ID) to their keys.
//
// Errors wrap ErrNotFound, ErrConflict, ErrBusy, ErrLeaseLost or ErrInvalid so the
// service can answer 404, 409 or retry; a stored row that does not decode is
// an error naming the row, never a zero value.
package db

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors every implementation wraps.
var (
	// ErrNotFound: no such assistant, thread, run or version for this
	// tenant.
	ErrNotFound = errors.New("db: not found")
	// ErrConflict: the ID exists already (create with IfExistsRaise).
	ErrConflict = errors.New("db: already exists")
	// ErrBusy: the thread has a running run, so another cannot start.
	ErrBusy = errors.New("db: the thread has a running run")
	// ErrLeaseLost: the lease was taken over or the run finished; the
	// holder must stop writing.
	ErrLeaseLost = errors.New("db: the run's lease was lost")
	// ErrInvalid: the caller passed something the store cannot accept (an
	// unknown sort column or status, a negative limit, JSON that is not an
	// object where one is required); the message names it. The service
	// answers 422.
	ErrInvalid = errors.New("db: invalid argument")
)

// IfExists says what a create does when the ID is taken.
type IfExists string

// IfExists values (LangGraph's if_exists).
const (
	IfExistsRaise     IfExists = "raise"      // ErrConflict
	IfExistsDoNothing IfExists = "do_nothing" // return the existing row
)

// Metadata is free-form JSON metadata; searches match it by containment
// (PostgreSQL's jsonb @> semantics on every backend), comparing numbers as
// stored. Read back, numbers are float64 (encoding/json's default), so an
// integer beyond 2^53 loses digits when read, though searches still match
// it exactly.
type Metadata map[string]any

// Assistant is a graph with its configuration, versioned: every update
// makes a new version, and one version is the latest.
type Assistant struct {
	ID          string          `json:"assistant_id"`
	GraphID     string          `json:"graph_id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Config      json.RawMessage `json:"config"`  // LangGraph's config object ({} when empty)
	Context     json.RawMessage `json:"context"` // the run context ({} when empty)
	Metadata    Metadata        `json:"metadata"`
	Version     int             `json:"version"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// AssistantPatch changes an assistant, making a new latest version. Nil
// fields keep their value; Metadata is merged key by key.
type AssistantPatch struct {
	GraphID     *string
	Name        *string
	Description *string
	Config      json.RawMessage
	Context     json.RawMessage
	Metadata    Metadata
}

// Query bounds and orders a search. SortBy names a column the resource
// documents ("created_at", "updated_at", and others per resource); "" means
// created_at. Limit 0 means the implementation's default (10).
type Query struct {
	Metadata  Metadata // containment: every key must be present with an equal value
	Limit     int
	Offset    int
	SortBy    string
	SortOrder string // "asc" or "desc" (default)
}

// AssistantQuery filters assistants.
type AssistantQuery struct {
	Query
	GraphID string
	Name    string // substring, case-insensitive
}

// ThreadStatus is a thread's status.
type ThreadStatus string

// Thread statuses (LangGraph's).
const (
	ThreadIdle        ThreadStatus = "idle"
	ThreadBusy        ThreadStatus = "busy"
	ThreadInterrupted ThreadStatus = "interrupted"
	ThreadError       ThreadStatus = "error"
)

// Thread is a conversation: its checkpoints are in the saver; the row
// keeps what searches and lists need.
type Thread struct {
	ID       string       `json:"thread_id"`
	Metadata Metadata     `json:"metadata"`
	Status   ThreadStatus `json:"status"`
	// Values is a copy of the latest state, for search by values and for
	// lists; Interrupts the pending interrupts by task ID. The run service
	// writes both when a run ends.
	Values     json.RawMessage `json:"values"`
	Interrupts json.RawMessage `json:"interrupts"`
	// Error is the last run's error, when Status is error.
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// TTL, when set, expires the thread that long after its last
	// activity: its creation, a TTL change, a metadata update, a new run
	// or a run's result or state update. CreateThread stores it.
	TTL *TTL `json:"-"`
	// ExpiresAt is when the thread expires (zero: never; also once a
	// keep_latest thread was pruned, until its next activity).
	ExpiresAt time.Time `json:"-"`
}

// TTL strategies: what happens to an expired thread.
const (
	// TTLDelete deletes the thread with its runs, events and checkpoints.
	TTLDelete = "delete"
	// TTLKeepLatest keeps the thread and prunes its checkpoints to the
	// latest one.
	TTLKeepLatest = "keep_latest"
)

// TTL is a thread's time to live.
type TTL struct {
	// Duration is counted from the thread's last activity; positive.
	Duration time.Duration
	// Strategy is TTLDelete or TTLKeepLatest.
	Strategy string
}

// ExpiredThread is a thread whose TTL ran out (ExpiredThreads).
type ExpiredThread struct {
	Tenant   string
	ThreadID string
	Strategy string
}

// ThreadQuery filters threads.
type ThreadQuery struct {
	Query
	IDs    []string
	Status ThreadStatus
	Values json.RawMessage // containment on Values, as a JSON object
	// Title keeps threads whose metadata "title" (a string) contains this
	// text, case-insensitive; "" does not filter.
	Title string
}

// ThreadResult is what the run service records on a thread when a run
// ends or the state is updated.
type ThreadResult struct {
	Status     ThreadStatus
	Values     json.RawMessage
	Interrupts json.RawMessage
	Error      string
	// Title, when not empty, becomes the thread's metadata key "title"
	// unless the thread has that key already: a thread's title from its
	// first exchange, written with the result that holds it.
	Title string
}

// RunStatus is a run's status.
type RunStatus string

// Run statuses (LangGraph's). Pending and running are live; the others are
// terminal and final.
const (
	RunPending     RunStatus = "pending"
	RunRunning     RunStatus = "running"
	RunSuccess     RunStatus = "success"
	RunError       RunStatus = "error"
	RunTimeout     RunStatus = "timeout"
	RunInterrupted RunStatus = "interrupted"
)

// Terminal reports whether the status is final.
func (s RunStatus) Terminal() bool { return s != RunPending && s != RunRunning }

// Run is one execution request on a thread.
type Run struct {
	ID          string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	Status      RunStatus `json:"status"`
	Metadata    Metadata  `json:"metadata"`
	// Kwargs is the request as the run service needs it to execute the run
	// (input, command, config, context, stream modes...), opaque here.
	Kwargs            json.RawMessage `json:"kwargs"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	// AssistantVersion is the assistant version the run names (a Trellis
	// extension of the run API): its graph, config and context run it. 0
	// names none, and the run takes the assistant's latest version when
	// it executes.
	AssistantVersion int `json:"assistant_version,omitempty"`
	// Usage is what the run's model calls cost (opaque JSON), set when it
	// ends.
	Usage json.RawMessage `json:"usage,omitempty"`
	// Error is the error message of a run that ended in error.
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// AfterSeconds delays the start: the run is not claimable before
	// NotBefore.
	NotBefore time.Time `json:"-"`
	// CancelRequested is set by RequestCancel; the executing worker polls
	// it (and is told faster through the run service's signal).
	CancelRequested string `json:"-"` // "", "interrupt" or "rollback"
}

// PendingThread is a thread with pending runs (Runs.PendingThreads).
type PendingThread struct {
	Tenant   string
	ThreadID string
	// NotBefore is the earliest start of its pending runs; zero when one
	// may start now.
	NotBefore time.Time
}

// RunQuery filters a thread's runs.
type RunQuery struct {
	Status RunStatus
	Limit  int
	Offset int
}

// RunSearch finds a tenant's runs of one assistant across its threads
// (Runs.FindRuns), newest first by creation (CreatedAt, then ID, both
// descending), paged by a keyset cursor rather than an offset, so pages
// read while runs are added neither repeat nor skip a run.
type RunSearch struct {
	AssistantID string
	// Metadata keeps the runs whose metadata has each key with that string
	// value; Missing the runs whose metadata lacks each key. Keys are
	// plain names (no '"', '\\' or '.').
	Metadata map[string]string
	Missing  []string
	// Before, when set, keeps the runs after it in the order: the last
	// run of the previous page.
	Before *RunCursor
	// Limit is 1 to 1000 (10 when 0).
	Limit int
}

// RunCursor is a run's place in the order of RunSearch.
type RunCursor struct {
	CreatedAt time.Time
	ID        string
}

// Lease is a worker's claim on a running run. Token grows with each claim,
// so a worker whose lease was taken over is refused (ErrLeaseLost) on its
// next fenced write.
type Lease struct {
	Tenant    string
	RunID     string
	ThreadID  string
	Owner     string
	Token     int64
	ExpiresAt time.Time
}

// Event is one entry of a run's event log. Seq grows by one per run from 1:
// it is the SSE event id.
type Event struct {
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	Event     string          `json:"event"` // SSE event name, e.g. "values", "messages|ns"
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
}

// Assistants stores assistants and their versions.
type Assistants interface {
	CreateAssistant(ctx context.Context, tenant string, a Assistant, ifExists IfExists) (Assistant, error)
	GetAssistant(ctx context.Context, tenant, id string) (Assistant, error)
	// UpdateAssistant makes a new version from the latest and makes it
	// the latest.
	UpdateAssistant(ctx context.Context, tenant, id string, p AssistantPatch) (Assistant, error)
	DeleteAssistant(ctx context.Context, tenant, id string) error
	SearchAssistants(ctx context.Context, tenant string, q AssistantQuery) ([]Assistant, error)
	CountAssistants(ctx context.Context, tenant string, q AssistantQuery) (int, error)
	// AssistantVersions lists the versions, newest first.
	AssistantVersions(ctx context.Context, tenant, id string, q Query) ([]Assistant, error)
	// SetLatestVersion makes an existing version the latest.
	SetLatestVersion(ctx context.Context, tenant, id string, version int) (Assistant, error)
}

// Threads stores threads.
type Threads interface {
	CreateThread(ctx context.Context, tenant string, t Thread, ifExists IfExists) (Thread, error)
	GetThread(ctx context.Context, tenant, id string) (Thread, error)
	// UpdateThreadMetadata merges metadata into the thread's.
	UpdateThreadMetadata(ctx context.Context, tenant, id string, md Metadata) (Thread, error)
	// SetThreadResult records a run's outcome or a state update.
	SetThreadResult(ctx context.Context, tenant, id string, r ThreadResult) (Thread, error)
	// DeleteThread deletes the thread with its runs, events and leases.
	DeleteThread(ctx context.Context, tenant, id string) error
	SearchThreads(ctx context.Context, tenant string, q ThreadQuery) ([]Thread, error)
	CountThreads(ctx context.Context, tenant string, q ThreadQuery) (int, error)
	// CopyThread copies the thread row (not its runs) under a new ID.
	CopyThread(ctx context.Context, tenant, from, to string) (Thread, error)
	// SetThreadTTL replaces the thread's TTL (nil: it never expires) and
	// counts its expiry from now.
	SetThreadTTL(ctx context.Context, tenant, id string, ttl *TTL) (Thread, error)
	// ExpiredThreads lists threads of every tenant that expired at now and
	// have no pending or running run, the longest expired first, at most
	// limit (the sweeper is the service's own).
	ExpiredThreads(ctx context.Context, now time.Time, limit int) ([]ExpiredThread, error)
	// ExpireThread applies the strategy of a thread that is still expired
	// at now and still has no pending or running run, in one transaction:
	// TTLDelete deletes the row (with its runs, events and leases);
	// TTLKeepLatest clears its expiry until its next activity. It returns
	// the strategy applied, or ok false (doing nothing) when the thread
	// is gone, active again or no longer expired. The caller then deletes
	// or prunes the checkpoints.
	ExpireThread(ctx context.Context, tenant, id string, now time.Time) (strategy string, ok bool, err error)
}

// Runs stores runs and their leases. At most one run per (tenant, thread)
// is running at a time; the implementations enforce it with a unique
// index, not in memory.
type Runs interface {
	// CreateRun stores a pending run; the thread must exist.
	CreateRun(ctx context.Context, tenant string, r Run) (Run, error)
	GetRun(ctx context.Context, tenant, threadID, runID string) (Run, error)
	// ListRuns lists a thread's runs, newest first.
	ListRuns(ctx context.Context, tenant, threadID string, q RunQuery) ([]Run, error)
	// FindRuns lists the tenant's runs that q selects, in every thread.
	FindRuns(ctx context.Context, tenant string, q RunSearch) ([]Run, error)
	// DeleteRun deletes a terminal run with its events.
	DeleteRun(ctx context.Context, tenant, threadID, runID string) error
	// NextPending returns the thread's oldest pending run whose NotBefore
	// has passed (ErrNotFound when none).
	NextPending(ctx context.Context, tenant, threadID string, now time.Time) (Run, error)
	// ClaimRun moves a pending run to running and gives owner a new lease
	// (token one above any before) for ttl; ErrBusy when another run of
	// the thread is running; ErrConflict when the run is not pending.
	ClaimRun(ctx context.Context, tenant, runID, owner string, ttl time.Duration) (Run, Lease, error)
	// RenewLease extends the lease by ttl; ErrLeaseLost when its token no
	// longer holds the run.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ExpiredLeases lists leases expired at now, oldest first (any tenant:
	// the sweeper is the service's own).
	ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]Lease, error)
	// PendingThreads lists, across tenants, the threads that have pending
	// runs, in (tenant, thread) order after the given position ("" ""
	// for the start), with the earliest NotBefore of their pending runs
	// (zero when one may start at once). The start-up re-enqueue walks it.
	PendingThreads(ctx context.Context, afterTenant, afterThread string, limit int) ([]PendingThread, error)
	// TakeOver gives a run whose lease expired to owner with the next
	// token; ErrLeaseLost when the lease was renewed or taken since.
	TakeOver(ctx context.Context, expired Lease, owner string, ttl time.Duration) (Lease, error)
	// FinishRun records a terminal status (with usage and error) and ends
	// the lease, fenced by it.
	FinishRun(ctx context.Context, l Lease, status RunStatus, usage json.RawMessage, errMsg string) (Run, error)
	// CancelPending ends a pending run (not claimed) with status; a run
	// already running is ErrConflict (use RequestCancel).
	CancelPending(ctx context.Context, tenant, threadID, runID string, status RunStatus) (Run, error)
	// RequestCancel marks a live run to be cancelled with action
	// ("interrupt" or "rollback").
	RequestCancel(ctx context.Context, tenant, threadID, runID, action string) (Run, error)
}

// Events stores run event logs.
type Events interface {
	// AppendEvents appends events to the lease's run, fenced by the lease,
	// assigning Seq in order after the last one; it returns them with Seq
	// and CreatedAt set.
	AppendEvents(ctx context.Context, l Lease, events []Event) ([]Event, error)
	// ReadEvents returns the run's events with Seq > after, in order, at
	// most limit (0: all).
	ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]Event, error)
	// DeleteEvents removes a run's events (rollback) and reports how many.
	DeleteEvents(ctx context.Context, tenant, runID string) (int, error)
	// PruneEvents removes the events of runs that ended before cutoff
	// (the service keeps logs for a documented time).
	PruneEvents(ctx context.Context, endedBefore time.Time) (int, error)
}

// CheckpointMetadata stores metadata merged over saved checkpoints' own
// (LangGraph's PATCH /threads/{id}/state): the checkpoint savers never
// change a saved checkpoint, so the service keeps the patches beside them,
// keyed by checkpoint ID. They are deleted with their thread and copied
// with it.
// ResultFinisher is implemented by a DB that can end a run and record its
// thread's result in one transaction.
type ResultFinisher interface {
	// FinishRunWithResult is FinishRun and SetThreadResult of the lease's
	// thread in one transaction, fenced by the lease: it fails with
	// ErrLeaseLost, recording neither, when l no longer holds the run. It
	// returns the run and thread as stored and, when the backend reads
	// it in the same statement (Pending.Known), what the thread has
	// pending once the run has ended.
	FinishRunWithResult(ctx context.Context, l Lease, status RunStatus, usage json.RawMessage, errMsg string, r ThreadResult) (Run, Thread, Pending, error)
}

// TxEvents is implemented by a DB that can append a run's events inside a
// write transaction another backend opened on the same database (the
// checkpoint saver's, through internal/txhook), so that a step's
// checkpoint, its events and the lease check commit together.
type TxEvents interface {
	// AppendEventsTx is AppendEvents inside tx, the other backend's open
	// transaction (*sql.Tx on SQLite, pgx.Tx on PostgreSQL), which that
	// backend commits. With no events it checks the lease alone: it fails
	// with ErrLeaseLost when l no longer holds the run.
	AppendEventsTx(ctx context.Context, tx any, l Lease, events []Event) ([]Event, error)
}

type CheckpointMetadata interface {
	// PatchCheckpointMetadata merges md (top-level keys) into the
	// overlay of the thread's checkpoint and returns the merged overlay.
	// The thread must exist (ErrNotFound); the checkpoint is not checked.
	PatchCheckpointMetadata(ctx context.Context, tenant, threadID, checkpointID string, md Metadata) (Metadata, error)
	// CheckpointMetadata returns the overlays of the thread's
	// checkpoints by checkpoint ID (empty when none; a missing thread has
	// none).
	CheckpointMetadata(ctx context.Context, tenant, threadID string) (map[string]Metadata, error)
}

// DB is the whole store of record.
type DB interface {
	Assistants
	Threads
	Runs
	Events
	CheckpointMetadata
	Keys
	Crons
	Datasets
	RunFeedback
	Experiments
	// Ping checks the database answers (GET /ok?check_db=1).
	Ping(ctx context.Context) error
	Close() error
}

// Cron is a scheduled run: every slot of Schedule (a 5-field cron
// expression in Timezone, UTC when empty) it creates a run of AssistantID
// with Payload (the run-create body) on ThreadID, or on a new thread when
// ThreadID is empty (a stateless cron).
type Cron struct {
	ID          string
	AssistantID string
	ThreadID    string // "" for a stateless cron
	UserID      string
	Schedule    string
	Timezone    string
	Payload     json.RawMessage // a JSON object
	Metadata    Metadata
	// NextRunAt is the next slot to fire; zero when the cron has no slot
	// left (past EndTime).
	NextRunAt time.Time
	// EndTime, when set, is the instant after which no slot fires.
	EndTime time.Time
	Enabled bool
	// OnRunCompleted is what a stateless cron does with its thread when
	// the run ends: "delete" (the default) or "keep".
	OnRunCompleted string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// CronPatch changes a cron. Nil fields keep their value; Metadata is
// merged key by key; Payload, when set, replaces the payload; ClearEndTime
// removes the end time.
type CronPatch struct {
	Schedule       *string
	Timezone       *string
	Payload        json.RawMessage
	Metadata       Metadata
	Enabled        *bool
	OnRunCompleted *string
	EndTime        *time.Time
	ClearEndTime   bool
	// NextRunAt replaces the next slot (the caller recomputes it when the
	// schedule, time zone, end time or enabled flag changes); a pointer to
	// the zero time means none.
	NextRunAt *time.Time
}

// CronQuery filters crons.
type CronQuery struct {
	Query
	AssistantID string
	ThreadID    string
	Enabled     *bool
}

// DueCron is a cron whose next slot has come (Crons.DueCrons).
type DueCron struct {
	Tenant string
	Cron
}

// Crons stores scheduled runs.
type Crons interface {
	// CreateCron stores a cron with a new ID when c.ID is empty; a thread
	// cron's thread must exist (ErrNotFound). Deleting the thread deletes
	// its crons.
	CreateCron(ctx context.Context, tenant string, c Cron) (Cron, error)
	GetCron(ctx context.Context, tenant, id string) (Cron, error)
	UpdateCron(ctx context.Context, tenant, id string, p CronPatch) (Cron, error)
	DeleteCron(ctx context.Context, tenant, id string) error
	// SearchCrons lists crons by assistant, thread, enabled flag and
	// metadata containment; sort columns: cron_id, assistant_id,
	// thread_id, created_at, updated_at, next_run_date.
	SearchCrons(ctx context.Context, tenant string, q CronQuery) ([]Cron, error)
	CountCrons(ctx context.Context, tenant string, q CronQuery) (int, error)
	// DueCrons lists, across tenants, enabled crons whose NextRunAt is at
	// or before now, the most overdue first, at most limit.
	DueCrons(ctx context.Context, now time.Time, limit int) ([]DueCron, error)
	// AdvanceCron claims the slot of a due cron: it moves NextRunAt from
	// slot to next (zero: no slot left) only when NextRunAt is still slot
	// and the cron enabled, reporting whether it did. Of several callers
	// passing the same slot exactly one gets true, so each slot fires at
	// most once across replicas.
	AdvanceCron(ctx context.Context, tenant, id string, slot, next time.Time) (bool, error)
}
