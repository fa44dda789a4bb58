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

// sendWebhook is the queue's webhook function.
func (s *Server) sendWebhook(ctx context.Context, job queue.WebhookJob) error {
	return s.sender().Send(ctx, job.URL, job.Body)
}
