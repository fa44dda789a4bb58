package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
)

// Stop cancels a live run with action Interrupt or Rollback: a pending run
// ends at once (interrupted; removed for rollback); a running one is asked
// to stop, here and, through the database and the broker, on the worker
// that runs it. A run that already ended is an error wrapping
// db.ErrConflict; a run that is gone (rolled back or deleted meanwhile)
// one wrapping db.ErrNotFound. Every wire stops runs through it.
func (s *Service) Stop(ctx context.Context, tenant string, run db.Run, action string) error {
	if action != Interrupt && action != Rollback {
		return inputErr("/action", "must be interrupt or rollback, got %q", action)
	}
	if run.Status == db.RunPending {
		_, err := s.cfg.DB.CancelPending(ctx, tenant, run.ThreadID, run.ID, db.RunInterrupted)
		if err == nil {
			s.forgetFresh(tenant, run.ThreadID, run.ID)
			s.cfg.Broker.End(run.ID)
			if action == Rollback {
				if err := s.rollback(ctx, tenant, run); err != nil && !errors.Is(err, db.ErrNotFound) {
					return err
				}
			}
			return nil
		}
		if !errors.Is(err, db.ErrConflict) {
			return err
		}
		// Claimed meanwhile (or ended): cancel it as a running run.
	}
	if _, err := s.cfg.DB.RequestCancel(ctx, tenant, run.ThreadID, run.ID, action); err != nil {
		return err
	}
	s.Cancel(run.ID, action)
	return nil
}

// gone reports an error of Stop that means the run is no longer in the
// way: it ended, or it was removed (by a concurrent rollback, or with its
// thread) since it was listed.
func gone(err error) bool { return errors.Is(err, db.ErrConflict) || errors.Is(err, db.ErrNotFound) }

// older lists the thread's live runs that were stored before mine (by the
// thread's creation order), when mine is still pending; none when mine was
// claimed already (then nothing older is running: runs start in order).
func (s *Service) older(ctx context.Context, tenant string, mine db.Run) ([]db.Run, error) {
	pending, err := s.cfg.DB.ListRuns(ctx, tenant, mine.ThreadID, db.RunQuery{Status: db.RunPending, Limit: 1000})
	if err != nil {
		return nil, err
	}
	at := -1
	for i, r := range pending { // newest first
		if r.ID == mine.ID {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, nil
	}
	out := append([]db.Run{}, pending[at+1:]...)
	running, err := s.cfg.DB.ListRuns(ctx, tenant, mine.ThreadID, db.RunQuery{Status: db.RunRunning, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, r := range running {
		// A newer run runs before mine only when mine waits for its
		// after_seconds; that one is not in mine's way to stop.
		if r.ID != mine.ID && !r.CreatedAt.After(mine.CreatedAt) {
			out = append(out, r)
		}
	}
	return out, nil
}

// settle applies the multitask strategy once the new run is stored, so
// that concurrent creates on one thread agree whatever their interleaving:
// with Interrupt or Rollback every live run stored before mine is stopped
// (the newest double-text wins; a run that ended or vanished meanwhile is
// skipped, never an error); with Reject, mine is withdrawn and refused
// when an older live run appeared beside it after the first look.
func (s *Service) settle(ctx context.Context, tenant string, mine db.Run, strategy string) error {
	if strategy == Enqueue {
		return nil
	}
	older, err := s.older(ctx, tenant, mine)
	if err != nil || len(older) == 0 {
		return err
	}
	if strategy == Reject {
		if _, err := s.cfg.DB.CancelPending(ctx, tenant, mine.ThreadID, mine.ID, db.RunInterrupted); err != nil {
			if errors.Is(err, db.ErrConflict) {
				return nil // claimed meanwhile: the older run ended first, so mine stands
			}
			return err
		}
		if err := s.cfg.DB.DeleteRun(ctx, tenant, mine.ThreadID, mine.ID); err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("runs: withdraw run %s: %w", mine.ID, err)
		}
		return ErrThreadBusy
	}
	for _, r := range older {
		// A newer run that stopped mine stops every run older than mine
		// too (its list, read after mine was stored, holds them): once
		// mine is stopped, the rest of the sweep is that run's.
		cur, err := s.cfg.DB.GetRun(ctx, tenant, mine.ThreadID, mine.ID)
		if errors.Is(err, db.ErrNotFound) || (err == nil && cur.Status != db.RunPending) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Stop(ctx, tenant, r, strategy); err != nil && !gone(err) {
			return err
		}
	}
	return nil
}
