package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// UnitKind is River's job kind of experiment units.
const UnitKind = "trellis_experiment_unit"

// Unit defaults.
const (
	// DefaultUnitAttempts bounds the attempts of one unit: a unit whose
	// attempt failed (its process stopped, its context ended, the
	// database answered an error) is tried again on any replica.
	DefaultUnitAttempts = 5
	// unitRetryWait is the wait before a unit's next attempt.
	unitRetryWait = time.Second
)

// UnitJob is one unit of an experiment: the case × repetition at Index
// (case Index / repetitions, repetition Index % repetitions). Attempt is
// set by the queue when the job runs (1 for the first attempt); it is not
// part of the job's identity.
type UnitJob struct {
	Tenant       string `json:"tenant"`
	ExperimentID string `json:"experiment_id"`
	Index        int    `json:"index"`
	Attempt      int    `json:"-"`
}

// Kind is River's job kind of UnitJob.
func (UnitJob) Kind() string { return UnitKind }

// UnitFunc works one unit; an error retries it later, up to
// Config.UnitAttempts times. It must be idempotent: a unit can run again
// after a replica died in the middle of it.
type UnitFunc func(ctx context.Context, job UnitJob) error

// unitWorker works experiment units.
type unitWorker struct {
	river.WorkerDefaults[UnitJob]
	q *Queue
}

func (w *unitWorker) Work(ctx context.Context, job *river.Job[UnitJob]) error {
	u := job.Args
	u.Attempt = job.Attempt
	ctx, cancel := bounded(ctx, w.q.cfg.UnitTimeout)
	defer cancel()
	err := w.q.cfg.Unit(ctx, u)
	if err != nil {
		w.q.cfg.Logger.WarnContext(ctx, "queue: experiment unit failed", "tenant", u.Tenant, "experiment_id", u.ExperimentID,
			"index", u.Index, "attempt", job.Attempt, "max_attempts", job.MaxAttempts, "error", err.Error())
	}
	return err
}

// NextRetry tries a failed unit again after a short wait: the failure is
// usually a stopped replica, not the unit.
func (w *unitWorker) NextRetry(job *river.Job[UnitJob]) time.Time {
	return time.Now().Add(unitRetryWait * time.Duration(min(max(job.Attempt, 1), 30)))
}

// EnqueueUnit stores an experiment unit's job; a worker of any process
// works it. A unit has one job: while a job of the same tenant,
// experiment and index exists (waiting, running, retrying or completed),
// EnqueueUnit adds nothing, so a unit enqueued twice (a retry re-enqueueing
// its successor) runs once.
func (q *Queue) EnqueueUnit(ctx context.Context, job UnitJob) error {
	if q.cfg.Unit == nil {
		return errors.New("queue: no Unit function is configured")
	}
	if job.Tenant == "" || job.ExperimentID == "" || job.Index < 0 {
		return fmt.Errorf("queue: bad experiment unit %+v", job)
	}
	_, err := q.eng.ops().insert(ctx, job, &river.InsertOpts{Queue: q.cfg.QueueName, MaxAttempts: q.cfg.UnitAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue: enqueue unit %d of experiment %s: %w", job.Index, job.ExperimentID, err)
	}
	return nil
}
