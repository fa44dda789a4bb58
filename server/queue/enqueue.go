package queue

import (
	"context"
	"errors"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// args are a run job's arguments.
type args struct {
	Tenant   string `json:"tenant"`
	ThreadID string `json:"thread_id"`
	// Slot numbers the job among the thread's jobs for deduplication (see
	// enqueue); slotOverflow and slotDelayed mark jobs inserted without.
	Slot int `json:"slot"`
}

// Slots of jobs that are not deduplicated.
const (
	slotOverflow = -1 // every slot was held by a running job
	slotDelayed  = -2 // EnqueueAt: must not start before its time
)

// Kind is River's job kind of args.
func (args) Kind() string { return Kind }

// slots is how many deduplicated jobs a thread may have at once. Each slot
// holds at most one job that is waiting or running; a request finding
// every slot's job running (one runs the thread; others are checking
// whether it is busy, or are left by a crash until River's rescuer
// discards them) gets a job without deduplication, so it is never dropped.
const slots = 6

// slotRetries bounds how often enqueue retries one slot whose job changed
// under it before it moves on to the next slot.
const slotRetries = 3

// uniqueStates are the states in which a job holds its slot. River
// requires available, pending, running and scheduled here, so a running job
// cannot be left out; enqueue works around that by skipping slots whose job
// is running. Completed jobs must not count: a finished job would block the
// thread until the cleaner removes it.
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// jobOps are the River calls enqueue makes, on the pool or in a
// transaction.
type jobOps struct {
	insert func(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	del    func(ctx context.Context, id int64) (*rivertype.JobRow, error)
	retry  func(ctx context.Context, id int64) (*rivertype.JobRow, error)
	// snoozes knows which running rows are snoozes not yet written (nil
	// in a transaction, where no existing job may stand for the request).
	snoozes *snoozeTracker
	// inTx: the caller's change commits with the insert, so an existing job
	// can never stand for it (it may run before the commit).
	inTx bool
}

// How enqueue treats a waiting job it finds in a slot.
type mode int

const (
	// coalesce: a waiting job stands for the request; a snoozed one is
	// made due now (River's JobRetry: no new row, found by the next poll).
	coalesce mode = iota
	// replace: a waiting job is deleted and a new one inserted in its slot,
	// which wakes the workers at once and, in a transaction, commits with
	// the caller's change. Used in transactions and for More.
	replace
)

// enqueue makes sure a job of the thread starts after this call began.
//
// River's unique jobs cannot ignore running jobs (ByState must include
// running), and a running job is exactly the one that must not absorb a new
// request: its Advance may have read the thread's state before the caller's
// change and be completing now. So each thread has a few slots, a unique
// key each (tenant, thread, slot), tried in order:
//
//   - the slot is free: the job is inserted; done.
//   - its job is running: try the next slot, unless (coalesce) it is a job
//     of this process that returned a snooze River has not written yet:
//     it will run again, so it stands for the request (see snoozeTracker).
//   - its job is waiting (available, scheduled, snoozed): it will start
//     after this call began and read the state. With coalesce it stands for
//     the request (made due now if snoozed or scheduled); with replace it
//     is deleted and a new job inserted in the slot. A job that started meanwhile did so
//     after this call began, which is enough outside a transaction; inside
//     one, the next slot is tried.
//
// When every slot is held by a running job, a job without deduplication is
// inserted.
func enqueue(ctx context.Context, ops jobOps, m mode, queueName, tenant, threadID string) error {
	if ops.inTx {
		m = replace
	}
	for slot := range slots {
		next := false
		for try := 0; try < slotRetries && !next; try++ {
			res, err := ops.insert(ctx, args{Tenant: tenant, ThreadID: threadID, Slot: slot}, &river.InsertOpts{
				Queue:      queueName,
				UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: uniqueStates},
			})
			if err != nil {
				return err
			}
			if !res.UniqueSkippedAsDuplicate {
				return nil
			}
			job := res.Job
			switch {
			case m == coalesce && ops.snoozes != nil && ops.snoozes.willRerun(job):
				return nil // it snoozed and will run again, reading the state
			case job.State == rivertype.JobStateRunning:
				next = true
			case m == coalesce && job.AttemptedAt == nil && job.State == rivertype.JobStateAvailable:
				return nil // fresh: its insert woke the workers
			case m == coalesce:
				_, err := ops.retry(ctx, job.ID)
				// A job that started meanwhile is left alone (running) or, if
				// it even finished, revived to run once more, harmlessly.
				if err == nil {
					return nil
				}
				if ctx.Err() != nil {
					return err
				}
				// Gone, or its revival conflicts with a newer job in the
				// slot: try the slot again.
			default:
				_, err := ops.del(ctx, job.ID)
				if err == nil && ops.snoozes != nil {
					ops.snoozes.forget(job.ID)
				}
				switch {
				case errors.Is(err, rivertype.ErrJobRunning):
					if !ops.inTx {
						return nil
					}
					next = true
				case err != nil && !errors.Is(err, rivertype.ErrNotFound):
					return err
				}
			}
		}
	}
	_, err := ops.insert(ctx, args{Tenant: tenant, ThreadID: threadID, Slot: slotOverflow}, &river.InsertOpts{Queue: queueName})
	return err
}
