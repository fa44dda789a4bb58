package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// WebhookKind is River's job kind of webhook jobs.
const WebhookKind = "trellis_webhook"

// Webhook defaults.
const (
	DefaultWebhookAttempts  = 5
	DefaultWebhookRetryBase = 10 * time.Second
)

// WebhookJob is a webhook to send: Body POSTed to URL. The body is built
// when the run ends (its thread may be deleted right after), so a retry
// sends the same bytes.
type WebhookJob struct {
	Tenant string `json:"tenant"`
	RunID  string `json:"run_id"`
	URL    string `json:"url"`
	Body   []byte `json:"body"`
	// Headers are sent with the body (an A2A push notification's token
	// and the authorization its client asked for); the content type and
	// the signature are the sender's own and are not overridden.
	Headers map[string]string `json:"headers,omitempty"`
}

// Kind is River's job kind of WebhookJob.
func (WebhookJob) Kind() string { return WebhookKind }

// WebhookFunc sends one webhook; an error retries it later, up to the
// configured attempts.
type WebhookFunc func(ctx context.Context, job WebhookJob) error

// webhookWorker works webhook jobs, retrying failures with exponential
// backoff from Config.WebhookRetryBase.
type webhookWorker struct {
	river.WorkerDefaults[WebhookJob]
	q *Queue
}

func (w *webhookWorker) Work(ctx context.Context, job *river.Job[WebhookJob]) error {
	ctx, cancel := bounded(ctx, webhookTimeout)
	defer cancel()
	err := w.q.cfg.Webhook(ctx, job.Args)
	if err != nil {
		last := job.Attempt >= job.MaxAttempts
		w.q.cfg.Logger.WarnContext(ctx, "queue: webhook not delivered", "run_id", job.Args.RunID, "url", job.Args.URL,
			"attempt", job.Attempt, "max_attempts", job.MaxAttempts, "given_up", last, "error", err.Error())
	}
	return err
}

// NextRetry waits base, 2×base, 4×base... after each failed attempt.
func (w *webhookWorker) NextRetry(job *river.Job[WebhookJob]) time.Time {
	n := min(max(job.Attempt-1, 0), 16)
	return time.Now().Add(w.q.cfg.WebhookRetryBase << n)
}

// EnqueueWebhook stores a webhook job; it is sent by a worker of any
// process, retried on failure up to Config.WebhookAttempts times.
func (q *Queue) EnqueueWebhook(ctx context.Context, job WebhookJob) error {
	if q.cfg.Webhook == nil {
		return errors.New("queue: no Webhook function is configured")
	}
	_, err := q.eng.ops().insert(ctx, job, &river.InsertOpts{Queue: q.cfg.QueueName, MaxAttempts: q.cfg.WebhookAttempts})
	if err != nil {
		return fmt.Errorf("queue: enqueue the webhook of run %s: %w", job.RunID, err)
	}
	return nil
}
