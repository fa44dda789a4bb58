package server

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/webhook"
	"github.com/trellis-agents/trellis/server/queue"
	"github.com/trellis-agents/trellis/server/runs"
)

// sender is the configured webhook sender.
func (s *Server) sender() webhook.Sender {
	return webhook.Sender{Secret: s.cfg.Webhooks.Secret, AllowPrivate: s.cfg.Webhooks.AllowPrivate}
}

// runFinished is the run service's Finished hook: a run that asked for a
// webhook gets a webhook job, its body built now (a temporary thread is
// deleted right after).
func (s *Server) runFinished(ctx context.Context, tenant string, run db.Run) {
	s.a2aPushes(ctx, tenant, run)
	s.onlineFinished(ctx, tenant, run)
	var kw runs.Kwargs
	if json.Unmarshal(run.Kwargs, &kw) != nil || kw.Webhook == "" {
		return
	}
	s.mu.Lock()
	enqueue := s.webhooks
	s.mu.Unlock()
	if enqueue == nil {
		s.log.Warn("a run's webhook was not sent: the queue is not running", "run", run.ID)
		return
	}
	body, err := api.WebhookBody(ctx, s.st.db, tenant, run)
	if err != nil {
		s.log.Error("a run's webhook body could not be built; not sent", "run", run.ID, "err", err)
		return
	}
	if err := enqueue(ctx, queue.WebhookJob{Tenant: tenant, RunID: run.ID, URL: kw.Webhook, Body: body}); err != nil {
		s.log.Error("a run's webhook could not be queued; not sent", "run", run.ID, "err", err)
	}
}

// a2aPushes queues the A2A push notifications of a run's task (its
// clients' configs), through the webhook queue: the same retries, the
// same signature and the same guarded dialer as the run webhooks.
func (s *Server) a2aPushes(ctx context.Context, tenant string, run db.Run) {
	s.mu.Lock()
	enqueue, a2a := s.webhooks, s.a2a
	s.mu.Unlock()
	if a2a == nil || run.Metadata["source"] != "a2a" {
		return
	}
	pushes, err := a2a.Pushes(ctx, tenant, run)
	if err != nil {
		s.log.Error("a task's push notifications could not be built; not sent", "run", run.ID, "err", err)
		return
	}
	if len(pushes) > 0 && enqueue == nil {
		s.log.Warn("a task's push notifications were not sent: the queue is not running", "run", run.ID)
		return
	}
	for _, p := range pushes {
		if err := enqueue(ctx, queue.WebhookJob{Tenant: tenant, RunID: run.ID, URL: p.URL, Body: p.Body, Headers: p.Headers}); err != nil {
			s.log.Error("a task's push notification could not be queued; not sent", "run", run.ID, "err", err)
		}
	}
}

// sendWebhook is the queue's webhook function.
func (s *Server) sendWebhook(ctx context.Context, job queue.WebhookJob) error {
	return s.sender().SendWith(ctx, job.URL, job.Body, job.Headers)
}
