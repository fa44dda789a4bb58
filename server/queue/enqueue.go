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
	// enqueue); -1 marks a job inserted without deduplication.
	Slot int `json:"slot"`
}

// Kind is River's job kind of args.
func (args) Kind() string { return Kind }

// slots is how many deduplicated jobs a thread may have at once. Each slot
// holds at most one job that is waiting or running; a request finding
// every slot's job running (normally one runs, plus a dead one left by a
// crash until River's rescuer discards it) gets a job without
// deduplication, so it is never dropped.
const slots = 4

// deleteRetries bounds how often enqueue replaces a slot's waiting job
// before it moves on to the next slot.
const deleteRetries = 3

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
	// inTx: the caller's change commits with the insert, so an existing job
	// can never stand for it (it may run before the commit).
	inTx bool
}

// enqueue makes sure a job of the thread starts after this call began.
//
// River's unique jobs cannot ignore running jobs (ByState must include
// running), and a running job is exactly the one that must not absorb a new
// request: its Advance may have read the thread's state before the caller's
// change and be completing now. So each thread has a few slots, a unique
// key each (tenant, thread, slot), tried in order:
//
//   - the slot is free: the job is inserted; done.
//   - its job is available and has never started (outside a transaction):
//     it will start later and read the state; done, nothing added.
//   - its job is running: try the next slot.
//   - its job is waiting otherwise (snoozed, scheduled; or any waiting job
//     inside a transaction): delete it and insert anew in the same slot, so
//     the job is due now (and, in a transaction, commits with the change).
//     If it started meanwhile it did so after this call began, which is
//     enough outside a transaction; inside one, try the next slot.
//
// When every slot is held by a running job, a job without deduplication is
// inserted.
func enqueue(ctx context.Context, ops jobOps, queueName, tenant, threadID string) error {
	for slot := range slots {
		next := false
		for try := 0; try < deleteRetries && !next; try++ {
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
			case job.State == rivertype.JobStateRunning:
				next = true
			case !ops.inTx && job.State == rivertype.JobStateAvailable && job.AttemptedAt == nil:
				return nil
			default:
				_, err := ops.del(ctx, job.ID)
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
	_, err := ops.insert(ctx, args{Tenant: tenant, ThreadID: threadID, Slot: -1}, &river.InsertOpts{Queue: queueName})
	return err
}
