package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// Rescue of jobs whose process died. River's rescuer (run by the leader
// every 30 s) looks at jobs marked running for over RescueStuckJobsAfter
// and skips each one whose kind's Timeout has not passed since its attempt
// started; the others are retried (attempts left) or discarded. So a kind
// is rescued about its Timeout after a killed attempt began. Each worker's
// Timeout below is its working bound plus rescueMargin, and Work cancels
// the work itself at the bound: a job cut at its bound has a minute to
// return and complete before the rescuer could take it for dead.
const (
	// DefaultRescueStuckJobsAfter is the default Config.RescueStuckJobsAfter.
	DefaultRescueStuckJobsAfter = time.Minute
	// DefaultUnitTimeout is the default Config.UnitTimeout.
	DefaultUnitTimeout = 15 * time.Minute
	// webhookTimeout bounds one attempt to send a webhook.
	webhookTimeout = 2 * time.Minute
	// rescueMargin is the time a job cut at its bound has to return before
	// River may rescue it.
	rescueMargin = time.Minute
)

// Timeout is River's bound of a run job: JobTimeout plus the margin.
func (w *worker) Timeout(*river.Job[args]) time.Duration { return w.q.cfg.JobTimeout + rescueMargin }

// Timeout is River's bound of a unit: UnitTimeout plus the margin, or
// plus UnitTimeout itself when that is shorter (a short bound, as tests
// set, has a margin as long as the work it allows).
func (w *unitWorker) Timeout(*river.Job[UnitJob]) time.Duration {
	return w.q.cfg.UnitTimeout + min(rescueMargin, w.q.cfg.UnitTimeout)
}

// Timeout is River's bound of a webhook: webhookTimeout plus the margin.
func (w *webhookWorker) Timeout(*river.Job[WebhookJob]) time.Duration {
	return webhookTimeout + rescueMargin
}

// bounded returns ctx cut at d, the working bound of a job.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
