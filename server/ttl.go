package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/runs"
)

// Defaults of the thread sweeper.
const (
	DefaultThreadSweepInterval = time.Minute
	DefaultThreadSweepBatch    = 100
)

// threadLoop expires threads whose TTL ran out, and applies checkpoint
// retention to the next batch of threads (retention.go), at start and then
// every ThreadSweepInterval, until ctx ends.
func (w *sweeper) threadLoop(ctx context.Context) {
	defer w.loop.Done()
	t := time.NewTicker(w.s.threadSweepInterval())
	defer t.Stop()
	for {
		if n, err := w.s.sweepThreads(ctx, time.Now()); err != nil && ctx.Err() == nil {
			w.s.log.Warn("thread TTL sweep failed; retrying at the next tick", "err", err)
		} else if n > 0 {
			w.s.log.Info("expired threads whose TTL ran out", "threads", n)
		}
		if st, err := w.s.sweepRetention(ctx); err != nil && ctx.Err() == nil {
			w.s.log.Warn("checkpoint retention sweep failed; going on at the next tick", "err", err)
		} else if st.Removed > 0 {
			w.s.log.Info("removed checkpoints past their threads' retention", "threads", st.Threads, "checkpoints", st.Removed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) threadSweepInterval() time.Duration {
	if s.cfg.ThreadSweepInterval > 0 {
		return s.cfg.ThreadSweepInterval
	}
	return DefaultThreadSweepInterval
}

// sweepThreads expires at most ThreadSweepBatch threads (of every tenant)
// that expired at now and have no pending or running run: the store of
// record deletes the row (its runs, events and leases go with it) or clears
// its expiry, in one transaction that checks again that the thread is
// expired and idle; then its checkpoints are deleted, or pruned to the
// latest. It reports how many threads it expired.
func (s *Server) sweepThreads(ctx context.Context, now time.Time) (int, error) {
	batch := s.cfg.ThreadSweepBatch
	if batch <= 0 {
		batch = DefaultThreadSweepBatch
	}
	expired, err := s.st.db.ExpiredThreads(ctx, now, batch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range expired {
		// Read before they go: its runs name the apps whose data for
		// the thread is deleted with it.
		assistants, aerr := s.threadAssistants(ctx, e.Tenant, e.ThreadID)
		strategy, ok, err := s.st.db.ExpireThread(ctx, e.Tenant, e.ThreadID, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("expire thread %s: %w", e.ThreadID, err))
			continue
		}
		if !ok {
			continue // active again, or changed, since it was listed
		}
		n++
		key := runs.ThreadKey(e.Tenant, e.ThreadID)
		if strategy == "keep_latest" {
			if _, err := s.st.saver.Prune(ctx, checkpoint.PruneOptions{ThreadID: key, KeepLatest: 1}); err != nil {
				errs = append(errs, fmt.Errorf("prune the checkpoints of expired thread %s: %w", e.ThreadID, err))
			}
			continue
		}
		if err := s.st.saver.DeleteThread(ctx, key); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete the checkpoints of expired thread %s: %w", e.ThreadID, err))
		}
		if aerr == nil {
			aerr = s.deleteScopes(ctx, e.Tenant, e.ThreadID, assistants)
		}
		if aerr != nil {
			errs = append(errs, fmt.Errorf("delete the app data of expired thread %s: %w", e.ThreadID, aerr))
		}
	}
	return n, errors.Join(errs...)
}
