package db

import (
	"context"
	"time"
)

// RunEnd is what a reader of a run's events learns of the run's state in
// the same read: its status and, once it failed, its error.
type RunEnd struct {
	Status RunStatus
	Error  string
}

// EventsStatusReader is implemented by a DB that reads a run's events and
// its status in one statement (one snapshot): a reader that sees a
// terminal status then knows the log it read is complete, since a run's
// events commit no later than its end. Both backends implement it.
type EventsStatusReader interface {
	// ReadEventsStatus is ReadEvents that also returns the run's status
	// as of the read.
	ReadEventsStatus(ctx context.Context, tenant, runID string, after int64, limit int) ([]Event, RunEnd, error)
}

// PendingReader is implemented by a DB that reads, in one statement, what
// a worker needs to start a thread's next run. Both backends implement it.
type PendingReader interface {
	// NextPendingRun is NextPending that also reports whether another run
	// of the thread is running, and returns the run's assistant as it is
	// now (ok false when the run names a version, or the assistant is
	// gone: the caller reads it as before).
	NextPendingRun(ctx context.Context, tenant, threadID string, now time.Time) (run Run, running bool, a Assistant, ok bool, err error)
}

// AssistantVersionGetter is implemented by a DB that reads one version of
// an assistant by its number (one indexed read, not a page of versions).
// Both backends implement it.
type AssistantVersionGetter interface {
	// GetAssistantVersion returns version v of assistant id; ErrNotFound
	// when the assistant or the version does not exist.
	GetAssistantVersion(ctx context.Context, tenant, id string, v int) (Assistant, error)
}

// AssistantResolver is implemented by a DB that finds an assistant by ID
// or, failing that, a graph's first assistant, in one read. Both backends
// implement it.
type AssistantResolver interface {
	// ResolveAssistant returns the assistant whose ID is idOrGraph, else
	// the first assistant (creation order, ties by ID) of the graph
	// idOrGraph; ErrNotFound when there is neither.
	ResolveAssistant(ctx context.Context, tenant, idOrGraph string) (Assistant, error)
}

// PendingPeeker is implemented by a DB that tells, in one read, whether a
// thread has a pending run due and when its earliest delayed one may
// start. Both backends implement it.
type PendingPeeker interface {
	// PendingAfter reports whether a pending run of the thread is due at
	// now, and the earliest NotBefore after now of its pending runs (zero:
	// none). A thread that does not exist has neither.
	PendingAfter(ctx context.Context, tenant, threadID string, now time.Time) (due bool, next time.Time, err error)
}

// Pending is what a thread has pending as one read saw it: PendingAfter's
// answer, which a finish (ResultFinisher, TxResultFinisher) may read in
// its own statement, after the run's end, so that its caller need not
// read the thread's runs again.
type Pending struct {
	// Known says whether the finish read it; false, the caller asks
	// PendingAfter.
	Known bool
	// Due says whether a pending run of the thread may start now.
	Due bool
	// Next is the earliest start of the thread's pending runs not yet due
	// (zero: none).
	Next time.Time
}

// ThreadRuns is what a new run of a thread needs to know of its runs.
type ThreadRuns struct {
	// LatestAssistant and LatestVersion are the assistant and version
	// (0: none named) of the thread's newest run ("" with no run).
	LatestAssistant string
	LatestVersion   int
	// Live says whether a run of the thread is pending or running.
	Live bool
}

// ThreadRunReader is implemented by a DB that reads a thread with what a
// new run of it needs to know of its runs, in one statement. Both backends
// implement it.
type ThreadRunReader interface {
	// GetThreadForRun is GetThread that also returns ThreadRuns, as of
	// the same read.
	GetThreadForRun(ctx context.Context, tenant, id string) (Thread, ThreadRuns, error)
}
